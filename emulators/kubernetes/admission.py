"""Admission: ValidatingAdmissionPolicies and their bindings, evaluated with a real CEL implementation.

As kube-apiserver's validating policy plugin does it (k8s.io/apiserver/pkg/admission/plugin/policy/
validating: dispatcher.go, validator.go; API reference "ValidatingAdmissionPolicy"):
- a binding (validationActions Deny) applies its policy to requests matching the policy's
  matchConstraints.resourceRules (apiGroups, apiVersions, operations, resources; "*" matches all);
- every matchCondition must be true for the policy to apply (an error, with failurePolicy Fail, denies);
- `variables` are computed in order and seen as `variables.<name>`; an error in one surfaces where it
  is used;
- each validation that is false denies, with its messageExpression (when it yields a non-empty
  string), else its message, else "failed expression: <expression>"; an evaluation error denies with
  "expression '<expression>' resulted in error: <error>" under failurePolicy Fail and is skipped under
  Ignore;
- the first denial becomes the answer: admission.NewForbidden's message
  `secrets "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied
  request: <message>`, with the validation's reason (default Invalid) and its code (Forbidden 403,
  Unauthorized 401, RequestEntityTooLarge 413, Invalid 422), and the same text as the one cause.
The CEL activation carries `object` (null on DELETE), `oldObject` (null on CREATE), `request`
(AdmissionRequest: operation, name, namespace, userInfo, kind, resource, dryRun), `params` (null: no
paramKind support) and `namespaceObject`. Not modelled: paramKind/paramRef, binding matchResources,
excludeResourceRules, auditAnnotations, the `authorizer` variable.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from typing import Any

import cel

from emulators.kubernetes.base import Json
from emulators.kubernetes.status import ApiError

REASON_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}
POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


class _EvalError(Exception):
    pass


_programs: dict[str, Any] = {}
_programs_lock = threading.Lock()


class _Activation:
    """The CEL activation of one request, converted to CEL values once and shared by its expressions.

    Converting `object` and `oldObject` (their data and managedFields) into CEL values is most of an
    evaluation's cost; a `cel.Context` keeps its converted environment until it is modified, so the request's
    fixed variables are added once. `variables` grows while the policy's variables are computed in order (each
    sees the earlier ones), so it is not added but resolved when an expression names it (the context's variable
    resolver, consulted before the added variables): always the ones computed so far, undefined before.
    """

    def __init__(self, base: Json) -> None:
        self.base = base
        self.variables: Json | None = None  # a dict once the policy's variables are being computed
        self._context: Any = None

    def context(self) -> Any:
        """Built on first use, inside an evaluation: a value CEL cannot hold fails that expression."""
        if self._context is None:
            context = cel.Context(variables=self.base)
            context.set_variable_resolver(self._resolve)
            self._context = context
        return self._context

    def _resolve(self, name: str) -> Any:
        return self.variables if name == "variables" else None


def evaluate(expression: str, activation: _Activation) -> Any:
    """Evaluate one CEL expression (compiled once, cached); raises _EvalError on any CEL error."""
    with _programs_lock:
        program = _programs.get(expression)
    try:
        if program is None:
            program = cel.compile(expression)
            with _programs_lock:
                _programs[expression] = program
        return program.execute(activation.context())
    except (ValueError, TypeError, KeyError, IndexError, RuntimeError, OverflowError) as exc:
        raise _EvalError(str(exc) or type(exc).__name__) from None


def _rule_matches(rule: Json, group: str, version: str, resource: str, operation: str) -> bool:
    def has(values: Any, wanted: str) -> bool:
        items = list(values or [])
        return "*" in items or wanted in items

    return (
        has(rule.get("apiGroups"), group)
        and has(rule.get("apiVersions"), version)
        and has(rule.get("resources"), resource)
        and has(rule.get("operations"), operation)
    )


def denial(resource: str, name: str, reason: str, text: str) -> ApiError:
    """The Status of a policy denial, as the dispatcher builds it from admission.NewForbidden."""
    subject = f'{resource} "{name}"' if name else resource
    details: Json = {}
    if name:
        details["name"] = name
    details["kind"] = resource
    details["causes"] = [{"message": text}]
    return ApiError(REASON_CODES.get(reason, 422), reason, f"{subject} is forbidden: {text}", details)


class Admission:
    """The ValidatingAdmissionPolicies and bindings of the cluster, and their evaluation."""

    _lock: threading.RLock
    _policies: dict[str, Json]
    _policy_bindings: dict[str, Json]
    _namespaces: dict[str, Json]

    def put_policy(self, doc: Json) -> None:
        kind = doc.get("kind")
        name = str((doc.get("metadata") or {}).get("name", ""))
        if kind not in POLICY_KINDS or not name:
            raise ValueError(f"not a named admission policy object: {kind!r}")
        with self._lock:
            target = self._policies if kind == POLICY_KINDS[0] else self._policy_bindings
            target[name] = copy.deepcopy(doc)

    def delete_policy(self, kind: str, name: str) -> bool:
        with self._lock:
            target = self._policies if kind == POLICY_KINDS[0] else self._policy_bindings
            return target.pop(name, None) is not None

    def admit(
        self,
        *,
        operation: str,
        user: str,
        namespace: str,
        name: str,
        obj: Json | None,
        old: Json | None,
        dry_run: bool = False,
        resource: str = "secrets",
        kind: str = "Secret",
    ) -> None:
        """Raise the first denial of a bound policy for this request, else return."""
        with self._lock:
            # No copies: a stored policy or binding is never changed in place (put_policy stores a copy and
            # replaces the entry; reads hand out copies), and evaluating one only reads it.
            bindings = [self._policy_bindings[k] for k in sorted(self._policy_bindings)]
            policies = dict(self._policies)
            namespace_object = copy.deepcopy(self._namespaces.get(namespace)) if namespace else None
        request = {
            "kind": {"group": "", "version": "v1", "kind": kind},
            "resource": {"group": "", "version": "v1", "resource": resource},
            "name": name,
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "dryRun": dry_run,
        }
        for binding in bindings:
            spec = binding.get("spec") or {}
            policy = policies.get(str(spec.get("policyName", "")))
            if policy is None or "Deny" not in (spec.get("validationActions") or []):
                continue
            message, reason = self._evaluate(
                policy,
                request=request,
                obj=obj,
                old=old,
                namespace_object=namespace_object,
                operation=operation,
                resource=resource,
            )
            if message is None:
                continue
            text = (
                f"ValidatingAdmissionPolicy '{policy['metadata']['name']}' with binding "
                f"'{binding['metadata']['name']}' denied request: {message}"
            )
            raise denial(resource, name, reason, text)

    @staticmethod
    def _evaluate(
        policy: Json,
        *,
        request: Json,
        obj: Json | None,
        old: Json | None,
        namespace_object: Json | None,
        operation: str,
        resource: str,
    ) -> tuple[str | None, str]:
        """(denial message or None, reason) of one policy for one request."""
        spec = policy.get("spec") or {}
        fail_closed = spec.get("failurePolicy", "Fail") != "Ignore"
        rules = (spec.get("matchConstraints") or {}).get("resourceRules") or []
        if not any(_rule_matches(r, "", "v1", resource, operation) for r in rules):
            return None, ""
        activation = _Activation(
            {"object": obj, "oldObject": old, "request": request, "params": None, "namespaceObject": namespace_object}
        )
        for condition in spec.get("matchConditions") or []:
            expression = str(condition.get("expression", ""))
            try:
                if evaluate(expression, activation) is not True:
                    return None, ""
            except _EvalError as exc:
                if not fail_closed:
                    return None, ""
                return f"expression '{expression.strip()}' resulted in error: {exc}", "Invalid"
        variables = activation.variables = {}
        for variable in spec.get("variables") or []:
            # One that fails is left out: an expression that uses it fails ("undefined"), as a lazy variable would.
            with contextlib.suppress(_EvalError):
                variables[str(variable["name"])] = evaluate(str(variable["expression"]), activation)
        for validation in spec.get("validations") or []:
            expression = str(validation.get("expression", ""))
            reason = str(validation.get("reason") or "Invalid")
            try:
                passed = evaluate(expression, activation)
            except _EvalError as exc:
                if not fail_closed:
                    continue
                return f"expression '{expression.strip()}' resulted in error: {exc}", reason
            if passed is True:
                continue
            message = ""
            if validation.get("messageExpression"):
                try:
                    produced = evaluate(str(validation["messageExpression"]), activation)
                    message = produced.strip() if isinstance(produced, str) else ""
                except _EvalError:
                    message = ""
            message = message or str(validation.get("message") or "") or f"failed expression: {expression.strip()}"
            return message, reason
        return None, ""
