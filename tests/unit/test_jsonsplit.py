"""The walker that splits a page the JSON decoder refuses for its depth: each element decoded on its own."""

from __future__ import annotations

import json

import pytest

from pullsecret.hyperfleet import jsonsplit


def deep(depth: int) -> str:
    return '{"a": ' * depth + "{}" + "}" * depth


def test_a_page_with_one_deep_element_keeps_the_others_and_the_deep_ones_id() -> None:
    text = (
        '{"kind": "ClusterList", "total": 3, "items": [ {"id": "c1", "s": "a]}\\"{["},'
        f'{{"id": "c2", "spec": {deep(5000)}, "n": [1, 2]}}, {{"id": "c3"}}, 7, "x" ] }}\n'
    )
    items, total = jsonsplit.page_items(text.encode())
    assert total == 3
    assert items[0] == {"id": "c1", "s": 'a]}"{['}
    assert isinstance(items[1], jsonsplit.Unparseable) and items[1].id == "c2"
    assert items[2:] == [{"id": "c3"}, 7, "x"]


def test_a_deep_elements_id_is_read_only_when_it_is_a_string_member() -> None:
    items, _ = jsonsplit.page_items(f'{{"items": [{{"spec": {deep(3000)}, "id": 5}}, [{deep(3000)}]]}}'.encode())
    assert [type(i).__name__ for i in items] == ["Unparseable", "Unparseable"]
    assert [i.id for i in items if isinstance(i, jsonsplit.Unparseable)] == [None, None]


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        '{"items": [1, 2}',
        '{"items": [{"a": 1]]}',
        '{"items": [1 2]}',
        '{"items": [1,]}',
        '{"items": [1]} x',
        '{"items": [1], "total"}',
        '{"total": 1}',
        '{"items": ["abc]}',
        '{"items": [' + deep(10) + "}",
        "{items: []}",
    ],
)
def test_what_is_not_a_page_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        jsonsplit.page_items(text.encode())


def test_bounds_and_encoding() -> None:
    with pytest.raises(ValueError):
        jsonsplit.page_items(b'{"items": [' + b" " * jsonsplit.MAX_BYTES + b"]}")
    with pytest.raises(ValueError):
        jsonsplit.page_items(('{"items": [' + ",".join(["1"] * (jsonsplit.MAX_ITEMS + 1)) + "]}").encode())
    with pytest.raises(ValueError):
        jsonsplit.page_items(b'{"items": ["\xff"]}')


def test_members_agree_with_the_decoder_on_ordinary_json() -> None:
    text = json.dumps({"id": "x", "generation": 4, "spec": {"a": [1, {"b": "}"}]}, "e": {}, "t": True})
    assert {k: json.loads(text[s:e]) for k, s, e in jsonsplit.members(text)} == json.loads(text)
    assert jsonsplit.int_member(text, "generation") == 4
    assert jsonsplit.int_member(text, "t") is None and jsonsplit.int_member(text, "nope") is None
    assert jsonsplit.string_member(text, "id") == "x" and jsonsplit.string_member(text, "generation") is None
    assert jsonsplit.int_member('{"generation": 2, "spec": ' + deep(4000) + "}", "generation") == 2
    assert jsonsplit.int_member('{"generation": 2,', "generation") == 2  # read before the break
    assert jsonsplit.string_member("[1]", "id") is None
