"""Label and field selectors (k8s.io/apimachinery/pkg/labels and pkg/fields)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from emulators.kubernetes.status import bad_request
from emulators.kubernetes.validation import is_label_value, is_qualified_name


# --------------------------------------------------------------------------------------------
# Selectors
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists, !, =, !=, in, notin, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and value in self.values
        if self.op in ("!=", "notin"):
            return not has or value not in self.values
        try:
            number, bound = int(value or ""), int(self.values[0])
        except ValueError:
            return False
        return number > bound if self.op == "gt" else number < bound


def _split_selector(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def parse_label_selector(text: str) -> list[Requirement]:
    """labels.Parse: equality, set-based and existence requirements, comma = AND."""
    reqs: list[Requirement] = []
    if not text.strip():
        return reqs
    key_re = r"([A-Za-z0-9][-A-Za-z0-9_./]*)"
    for raw_part in _split_selector(text):
        part = raw_part.strip()
        if m := re.fullmatch(r"(!?)\s*" + key_re, part):
            req = Requirement(m.group(2), "!" if m.group(1) else "exists")
        elif m := re.fullmatch(key_re + r"\s*(==|=|!=|>|<)\s*([^\s,()=!<>]*)", part):
            op = {"==": "=", ">": "gt", "<": "lt"}.get(m.group(2), m.group(2))
            req = Requirement(m.group(1), op, (m.group(3),))
        elif m := re.fullmatch(key_re + r"\s+(in|notin)\s*\(([^()]*)\)", part):
            values = tuple(v.strip() for v in m.group(3).split(","))
            req = Requirement(m.group(1), m.group(2), values)
        else:
            raise bad_request(f"unable to parse requirement: found '{part}', expected: valid requirement")
        for msg in is_qualified_name(req.key):
            raise bad_request(f'unable to parse requirement: key: Invalid value: "{req.key}": {msg}')
        for value in req.values:
            if req.op in ("gt", "lt"):
                if not re.fullmatch(r"-?\d+", value):
                    raise bad_request(
                        f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {value}"
                    )
                continue
            for msg in is_label_value(value):
                raise bad_request(f'unable to parse requirement: values[0][{req.key}]: Invalid value: "{value}": {msg}')
        reqs.append(req)
    return reqs


def parse_field_selector(text: str, allowed: tuple[str, ...]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    if not text.strip():
        return out
    for part in text.split(","):
        m = re.fullmatch(r"\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*", part)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        key, op, value = m.groups()
        if key not in allowed:
            raise bad_request(f'"{key}" is not a known field selector: only "' + '", "'.join(allowed) + '"')
        out.append((key, "!=" if op == "!=" else "=", value))
    return out
