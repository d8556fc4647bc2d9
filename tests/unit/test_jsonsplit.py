"""The walker that splits a page the JSON decoder refuses for its depth: each element decoded on its own."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from pullsecret.hyperfleet import jsonsplit


class CpuClock:
    """The walk's CPU clock (jsonsplit's `time.thread_time`), moved by the test alone: the cases hold the bytes
    budget and the time budget apart, whatever the machine's speed or a tracer's (mutmut's) cost."""

    def __init__(self) -> None:
        self.now = 100.0

    def thread_time(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def cpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[CpuClock]:
    clock = CpuClock()
    monkeypatch.setattr(jsonsplit, "time", SimpleNamespace(thread_time=clock.thread_time))
    yield clock


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
    ("text", "error"),
    [
        ("[]", "an object was expected"),
        ('{"items": [1, 2}', "',' or ']' was expected at 15"),
        ('{"items": [{"a": 1]]}', "a mismatched bracket at 18"),
        ('{"items": [[1}]]}', "a mismatched bracket at 13"),
        ('{"items": [1 2]}', "',' or ']' was expected at 13"),
        ('{"items": [1,]}', "a value was expected at 13"),
        ('{"items": [,1]}', "a value was expected at 11"),
        ('{"items": [1,', "a value was expected at the end of the text"),
        ('{"total": ', "a value was expected at the end of the text"),
        ('{"items": [1]} x', "text after the object"),
        ('{"items": [1]}}', "text after the object"),
        ('{"items": []}x', "text after the object"),
        ('{"items": [1], "total"}', "':' was expected at 22"),
        ('{"items" 1}', "':' was expected at 9"),
        ('{"items": [1], "total": 1 "x": 2}', "',' or '}' was expected at 26"),
        ('{"total": 1}', "no 'items' array"),
        ('{"items": ["abc]}', "Unterminated string"),
        ('{"items": [' + deep(10) + "}", "',' or ']' was expected at 83"),
        ('{"items": [[[[', "an array or object is not closed"),
        ('{"items": [' + "[" * 3000 + "]" * 2999 + "}]}", "a mismatched bracket at 3011"),
        ("{items: []}", "a member name was expected at 1"),
        ('{"items": [' + "[" * 3000 + '"a\x01b"' + "]" * 3000 + "]}", "Invalid control character"),
        ('{"it\x01ems": []}', "Invalid control character"),  # in a member's name too
        ("{}\n", "no 'items' array"),
        ('{"items": []}\x0c', "text after the object"),  # only JSON's four whitespace characters may follow
        ('{"items": []}X', "text after the object"),
        ('{"total": ' + "[" * 20_000 + "]" * 20_000 + ', "items": []}', "nested too deep"),
    ],
)
def test_what_is_not_a_page_is_a_value_error_saying_what_and_where(text: str, error: str) -> None:
    """A clear error (what was expected, at which character), never an IndexError or a partial page; a string the
    decoder refuses (a raw control character) is refused inside a value walked by hand too. The message is the
    error's first words, as a log line or status shows it."""
    with pytest.raises(ValueError, match="^" + re.escape(error)):
        jsonsplit.page_items(text.encode())


def test_compact_json_without_spaces_is_read_as_the_decoder_reads_it() -> None:
    assert jsonsplit.page_items(b'{"total":3,"items":[1,{"id":"c"}]}') == ([1, {"id": "c"}], 3)


def test_elements_of_what_is_not_an_array_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^an array was expected$"):
        jsonsplit.elements('{"items": {}}', 10)


def test_an_element_that_is_not_json_is_unparseable_and_the_others_are_kept() -> None:
    """The walk finds where a broken literal ends (`tru`, `nul`): that element alone is Unparseable (no id), as
    a too-deep one is, and the page keeps the others."""
    items, _ = jsonsplit.page_items(f'{{"items": [tru, {{"id": "c"}}, nul, [{deep(3000)}], 5]}}'.encode())
    assert [type(i).__name__ for i in items] == ["Unparseable", "dict", "Unparseable", "Unparseable", "int"]
    assert items[1] == {"id": "c"} and items[4] == 5


def test_strings_holding_brackets_and_quotes_inside_a_value_walked_by_hand() -> None:
    """Inside a value too deep for the decoder, a string's brackets and escaped quotes are text, not structure:
    the deep cluster's id and the clusters after it are read as written."""
    spec = '{"a": ' * 3000 + '"]]}}\\"[{"' + "}" * 3000
    text = f'{{"items": [{{"spec": {spec}, "note": "}}]\\"", "id": "c2"}}, {{"id": "c3"}}]}}'
    items, _ = jsonsplit.page_items(text.encode())
    assert isinstance(items[0], jsonsplit.Unparseable) and items[0].id == "c2"
    assert items[1:] == [{"id": "c3"}]


@pytest.mark.parametrize(
    ("text", "end"),
    [('"a\\"b" ,', 6), ('"]\\"[", 1', 6), ("true, 2", 4), ("-1.5e3]", 6), ('[1, "]", {"a": []}] x', 19)],
)
def test_value_end_is_just_past_the_value(text: str, end: int) -> None:
    assert jsonsplit.value_end(text, 0) == end
    assert jsonsplit.value_end(f'{{"k": {text}', 6) == end + 6


def test_value_end_reads_strings_as_the_decoder_does() -> None:
    assert jsonsplit.value_end('["", 1]', 1) == 3
    with pytest.raises(ValueError, match="Invalid control character"):
        jsonsplit.value_end('"a\x01b"', 0)


def test_bounds_and_encoding() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        jsonsplit.page_items(b'{"items": [' + b" " * jsonsplit.MAX_BYTES + b"]}")
    at_the_bound = b'{"items": [1' + b" " * (jsonsplit.MAX_BYTES - 14) + b"]}"
    assert len(at_the_bound) == jsonsplit.MAX_BYTES and jsonsplit.page_items(at_the_bound) == ([1], None)
    with pytest.raises(ValueError, match=f"^more than {jsonsplit.MAX_ITEMS} elements$"):
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
    # A broken object: a later member of the same name might follow, so nothing is read (json takes the last).
    assert jsonsplit.int_member('{"generation": 2,', "generation") is None
    assert jsonsplit.string_member("[1]", "id") is None and jsonsplit.string_member(text, "nope") is None
    # A generation is read when it is at most 20 characters (a 64-bit count); a longer value is never decoded.
    assert jsonsplit.int_member('{"generation": 12345678901234567890}', "generation") == 12345678901234567890
    assert jsonsplit.int_member('{"generation": 123456789012345678901}', "generation") is None


def test_duplicate_members_are_answered_as_json_answers_them_the_last_wins() -> None:
    """`"items":[...],"items":null` kept the array (the first) where json takes null (the last)."""
    with pytest.raises(ValueError, match="no 'items' array"):
        jsonsplit.page_items(f'{{"items": [{deep(3000)}], "items": null}}'.encode())
    items, total = jsonsplit.page_items(
        f'{{"total": 1, "items": [1], "items": [{deep(3000)}, 2], "total": 2}}'.encode()
    )
    assert (len(items), items[1], total) == (2, 2, 2)
    text = f'{{"id": "a", "generation": 1, "spec": {deep(3000)}, "generation": 7, "id": "b"}}'
    assert (jsonsplit.int_member(text, "generation"), jsonsplit.string_member(text, "id")) == (7, "b")
    assert jsonsplit.int_member('{"generation": 1, "generation": "x"}', "generation") is None


def test_the_hand_walk_stops_at_its_budget_and_says_the_total_read_before() -> None:
    """Per event and per page: WALK_BYTES of text walked by hand (values the decoder refuses) at most."""
    costly = "[" * (jsonsplit.WALK_BYTES // 2 + 1) + "]" * (jsonsplit.WALK_BYTES // 2 + 1)
    with pytest.raises(jsonsplit.OverBudget) as over:
        jsonsplit.page_items(f'{{"total": 3, "items": [{{"id": "c1"}}, {costly}]}}'.encode())
    assert over.value.total == 3
    with pytest.raises(jsonsplit.OverBudget):  # the generation may follow: the caller says it could not read it
        jsonsplit.int_member(f'{{"spec": {costly}, "generation": 2}}', "generation")
    assert jsonsplit.string_member(f'{{"spec": {costly}, "id": "c"}}', "id") is None
    # Under the budget the same shape is walked, and a budget is shared by every value of one page.
    cheap = "[" * 20_000 + "]" * 20_000  # deeper than any recursion limit a test run may have set
    items, _ = jsonsplit.page_items(f'{{"items": [{cheap}, {cheap}, 5]}}'.encode())
    assert [type(i).__name__ for i in items] == ["Unparseable", "Unparseable", "int"]
    with pytest.raises(jsonsplit.OverBudget):
        jsonsplit.page_items(f'{{"items": [{cheap}, {cheap}]}}'.encode(), jsonsplit.Budget(walk_bytes=60_000))


def test_the_hand_walk_stops_when_its_cpu_time_is_spent(cpu: CpuClock) -> None:
    """WALK_SECONDS of the thread's CPU per event or page, from the Budget's creation; bytes well within theirs."""
    cheap = "[" * 2_000 + "]" * 2_000
    budget = jsonsplit.Budget()
    cpu.now += jsonsplit.WALK_SECONDS  # exactly spent: still within
    assert jsonsplit.value_end(cheap, 0, budget) == len(cheap)
    cpu.now += 0.001
    with pytest.raises(jsonsplit.OverBudget, match=f"{jsonsplit.WALK_BYTES} bytes or {jsonsplit.WALK_SECONDS} s"):
        jsonsplit.value_end(cheap, 0, budget)
    later = jsonsplit.Budget(seconds=0.5)
    cpu.now += 0.5
    later.check(0)
    cpu.now += 0.001
    with pytest.raises(jsonsplit.OverBudget):
        later.check(0)


def test_the_bytes_budget_is_spent_value_by_value_up_to_its_last_byte() -> None:
    budget = jsonsplit.Budget(walk_bytes=10)
    budget.check(10)
    with pytest.raises(jsonsplit.OverBudget):
        budget.check(11)
    budget.spend(4)
    assert budget.bytes_left == 6
    budget.spend(6)
    with pytest.raises(jsonsplit.OverBudget):
        budget.spend(1)
    # The documented budget (jsonsplit, docs): 128 KiB and 0.05 s of CPU per event or page.
    assert (jsonsplit.Budget().bytes_left, jsonsplit.WALK_BYTES, jsonsplit.WALK_SECONDS) == (128 * 1024,) * 2 + (0.05,)


@pytest.mark.parametrize(
    ("page", "size", "parts"),
    [
        (1, 100, [(1, 50), (2, 50)]),
        (3, 10, [(5, 5), (6, 5)]),
        (2, 5, [(6, 1), (7, 1), (8, 1), (9, 1), (10, 1)]),
        (4, 1, [(4, 1)]),
    ],
)
def test_a_page_over_budget_is_asked_again_in_parts_that_hold_exactly_its_items(
    page: int, size: int, parts: list[tuple[int, int]]
) -> None:
    # As the list query sends them: `size=50`, never `size=50.0`.
    assert [f"page={p}&size={s}" for p, s in jsonsplit.sub_pages(page, size)] == [
        f"page={p}&size={s}" for p, s in parts
    ]
    covered = [i for p, s in parts for i in range((p - 1) * s, p * s)]
    assert covered == list(range((page - 1) * size, page * size))


DEEP = "[" * 20_000 + "]" * 20_000  # 40,000 bytes walked by hand: deeper than any recursion limit a run may set


def test_the_budget_a_caller_gives_is_the_one_every_reader_spends() -> None:
    """One Budget per event or page, whichever reader walks: 30,000 bytes refuse the 40,000-byte value; 40,000
    take it."""
    event = f'{{"spec": {DEEP}, "id": "c", "generation": 2}}'
    with pytest.raises(jsonsplit.OverBudget):
        jsonsplit.int_member(event, "generation", jsonsplit.Budget(walk_bytes=30_000))
    assert jsonsplit.int_member(event, "generation", jsonsplit.Budget(walk_bytes=40_000)) == 2
    assert jsonsplit.string_member(event, "id", jsonsplit.Budget(walk_bytes=30_000)) is None
    assert jsonsplit.string_member(event, "id", jsonsplit.Budget(walk_bytes=40_000)) == "c"
    # A page's members other than `items` spend the page's budget too.
    page = f'{{"spec": {DEEP}, "items": [1]}}'.encode()
    with pytest.raises(jsonsplit.OverBudget):
        jsonsplit.page_items(page, jsonsplit.Budget(walk_bytes=30_000))
    assert jsonsplit.page_items(page, jsonsplit.Budget(walk_bytes=40_000)) == ([1], None)
    # So does an element the decoder refuses for not being JSON (a broken literal), walked by hand to find its end.
    broken = b'{"items": [[' + b"1, " * 10_000 + b"tru], 2]}"
    with pytest.raises(jsonsplit.OverBudget):
        jsonsplit.page_items(broken, jsonsplit.Budget(walk_bytes=29_000))
    assert [type(i).__name__ for i in jsonsplit.page_items(broken, jsonsplit.Budget(walk_bytes=31_000))[0]] == [
        "Unparseable",
        "int",
    ]


def test_without_a_budget_each_reader_has_one_for_its_whole_text() -> None:
    """Two values of 80,000 bytes each: within WALK_BYTES one by one, past it together."""
    wide = "[" * 40_000 + "]" * 40_000
    event = f'{{"a": {wide}, "b": {wide}, "id": "c", "generation": 2}}'
    with pytest.raises(jsonsplit.OverBudget):
        jsonsplit.int_member(event, "generation")
    assert jsonsplit.string_member(event, "id") is None
    assert jsonsplit.string_member(f'{{"a": {wide}, "id": "c"}}', "id") == "c"


def test_a_deep_elements_id_is_read_within_the_pages_budget() -> None:
    """The id of a too-deep cluster is read by walking it again, on the page's budget: past it the id is unknown
    (Unparseable without id) and the page is still served."""
    page = f'{{"items": [{{"id": "c2", "spec": {DEEP}}}, 3]}}'.encode()
    items, _ = jsonsplit.page_items(page, jsonsplit.Budget(walk_bytes=70_000))
    assert isinstance(items[0], jsonsplit.Unparseable) and items[0].id is None and items[1] == 3
    items, _ = jsonsplit.page_items(page, jsonsplit.Budget(walk_bytes=90_000))
    assert isinstance(items[0], jsonsplit.Unparseable) and items[0].id == "c2"


def strings(count: int) -> str:
    """An array never closed, of `count` strings `"x"`: the walk's 256th run (its 255th string) ends at 1,018."""
    return "[" + '"x",' * count


def test_a_value_past_its_budget_is_refused_while_walked_not_at_its_end() -> None:
    """The walk looks at its budget every 256 runs (a bracket run or a string; the CPU clock costs more than a
    step): at the 256th, 1,018 bytes in, a budget of 1,017 is spent, and the value is OverBudget although it
    never closes."""
    with pytest.raises(jsonsplit.OverBudget):
        jsonsplit.value_end('{"k": ' + strings(450), 6, jsonsplit.Budget(walk_bytes=1_017))


def test_between_its_looks_at_the_budget_the_walk_goes_on() -> None:
    """With 1,018 bytes the 256th run is within, and the next look would be at the 512th: a value left unclosed
    after its 451st run says its own error, not OverBudget."""
    with pytest.raises(ValueError, match=r"^an array or object is not closed$"):
        jsonsplit.value_end('{"k": ' + strings(450), 6, jsonsplit.Budget(walk_bytes=1_018))
