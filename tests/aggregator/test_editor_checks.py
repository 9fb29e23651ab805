"""The editor's checks: every field in words beside it, every problem at once, no 500, no
unlimited sign-in.  (The walk through the editor is test_editor.py; in Chromium,
test_editor_browser.py.)
"""

from __future__ import annotations

import re

import pytest

from deniable.aggregator.editor.forms import QUESTIONNAIRE
from deniable.errors import InvalidSurvey
from deniable.survey import FORMAT, Survey

from .test_editor import add, build, csrf_of, new_draft, sign_in

# Python's own words, which an operator must never read.
PYTHON_WORDS = re.compile(r"got (str|float|int|NoneType)|\bnan\b|Traceback|'abc'")


def field_problem(page: str, field: str) -> str:
    found = re.search(rf'<p class="problem" id="{field}-problem"[^>]*>([^<]*)</p>', page)
    assert found, f"no problem beside {field}"
    return found.group(1)


def test_a_condition_nested_too_deeply_is_refused_in_words_not_a_500(client, storage) -> None:
    if not QUESTIONNAIRE:
        pytest.skip("this core has no show_if")
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    build(client, draft, csrf, survey_id="deep")
    leaf = '{"question": "burnout", "equals": true}'
    for depth in (5, 40, 1000, 5000):  # each level valid but for its depth
        deep = '{"all":[' * depth + leaf + f", {leaf}]}}" * depth
        response = add(client, draft, csrf, "yes_no", id="extra", text="Extra?", show_if_json=deep)
        assert response.status_code == 422, (depth, response.text[:300])
        assert "nested too deeply" in field_problem(response.text, "show_if"), depth
        assert "nested too deeply" in client.get(draft).text
        client.post(f"{draft}/questions/4/remove", data={"csrf": csrf})


def test_the_core_refuses_deep_conditions_with_a_typed_error_before_recursing() -> None:
    condition: dict = {"question": "a", "equals": True}
    for _ in range(5000):  # far beyond Python's recursion limit
        condition = {"all": [condition, {"question": "a", "equals": False}]}
    definition = {
        "format": FORMAT,
        "id": "s",
        "title": "S",
        "questions": [
            {"id": "a", "type": "yes_no", "text": "A?", "epsilon": 1},
            {"id": "b", "type": "yes_no", "text": "B?", "epsilon": 1, "show_if": condition},
        ],
    }
    if not QUESTIONNAIRE:
        pytest.skip("this core has no show_if")
    with pytest.raises(InvalidSurvey, match="nested too deeply"):
        Survey.from_dict(definition)


def test_every_invalid_value_is_shown_beside_its_field_in_words(client, storage) -> None:
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    build(client, draft, csrf, survey_id="checked")
    for typed in ("abc", "nan", "-1", "1e309", "inf", "0"):
        response = client.post(
            f"{draft}/questions/0",
            data={"csrf": csrf, "type": "yes_no", "id": "burnout", "text": "Burnt out?",
                  "epsilon": typed},
        )  # fmt: skip
        assert response.status_code == 422, typed
        words = field_problem(response.text, "epsilon")
        assert "ε" in words and "positive number" in words, (typed, words)
        assert not PYTHON_WORDS.search(words), words
        assert re.search(r'id="epsilon"[^>]*aria-invalid="true"', response.text), typed
    # A number question with its bounds wrong twice: both shown at once, each beside its field.
    response = client.post(
        f"{draft}/questions/3",
        data={"csrf": csrf, "type": "numeric", "id": "hours", "text": "", "epsilon": "x",
              "lo": "abc", "hi": "nan"},
    )  # fmt: skip
    assert response.status_code == 422
    for field in ("text", "epsilon", "lo", "hi"):
        assert not PYTHON_WORDS.search(field_problem(response.text, field)), field
    # An id taken by an earlier question: beside the id.
    response = client.post(
        f"{draft}/questions/1",
        data={"csrf": csrf, "type": "single_choice", "id": "burnout", "text": "Commute?",
              "options": "Car\nBus", "epsilon": "1"},
    )  # fmt: skip
    assert "an earlier question has this id" in field_problem(response.text, "id")
    # "Before publishing" lists every problem at once, each in words.
    page = client.get(draft).text
    problems = re.search(r'id="draft-problems"(.*?)</ul>', page, re.S)
    assert problems, page[-3000:]
    listed = re.findall(r"<li>(.*?)</li>", problems.group(1), re.S)
    assert len(listed) >= 6, listed  # q1's ε; q2's id; q4's text, ε, smallest, largest
    assert not any(PYTHON_WORDS.search(item) for item in listed), listed
    assert client.post(f"{draft}/publish", data={"csrf": csrf}).status_code == 422


def test_survey_settings_are_checked_beside_their_fields(client, storage) -> None:
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    build(client, draft, csrf, survey_id="settings")
    saved = client.post(
        f"{draft}/survey",
        data={"csrf": csrf, "survey_id": "settings", "title": "T",
              "relay_url": "javascript:alert(1)", "min_batch": "-5", "shuffle_unit": "question",
              "noise": "1", "noise_epsilon": "nan", "noise_family": "geometric"},
    )  # fmt: skip
    assert saved.status_code == 303
    page = client.get(draft).text
    for field in ("relay_url", "min_batch", "noise_epsilon"):
        words = field_problem(page, field)
        assert not PYTHON_WORDS.search(words), (field, words)
        assert re.search(rf'id="{field}"[^>]*aria-invalid="true"', page), field
    assert "http" in field_problem(page, "relay_url")
    listed = re.findall(r"<li>(.*?)</li>", re.search(r'id="draft-problems"(.*?)</ul>', page, re.S)
                        .group(1), re.S)  # fmt: skip
    assert len(listed) >= 3, listed
    # Fixed: nothing left to list.
    client.post(
        f"{draft}/survey",
        data={"csrf": csrf, "survey_id": "settings", "title": "T",
              "relay_url": "https://relay.example", "min_batch": "500",
              "shuffle_unit": "question"},
    )  # fmt: skip
    assert 'id="ready"' in client.get(draft).text


def test_sign_in_is_rate_limited_with_a_page_in_words(client, storage) -> None:
    statuses = []
    for i in range(40):
        response = client.post("/editor/sign-in", data={"token": f"dnb_wrong{i}"})
        statuses.append(response.status_code)
    assert statuses[0] == 401 and statuses[-1] == 429, statuses
    assert "Too many sign-in attempts" in response.text and "<html" in response.text
    assert int(response.headers["Retry-After"]) >= 1
    # A right token is refused too while the limit holds (an attacker cannot tell).
    token = storage.create_operator_token("late")
    assert client.post("/editor/sign-in", data={"token": token}).status_code == 429
    assert csrf_of  # (the helpers are shared with test_editor.py)


def test_advice_names_the_interval_each_figure_assumes(client, storage) -> None:
    """One choice of 6 at ε = 0.5: ±5 points past the exact-tail search (a closed form, an
    upper bound), ±10 points from the exact tail: each is named, and the mix is said."""
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    options = "\n".join(f"Cause {i}" for i in range(6))
    saved = add(client, draft, csrf, "single_choice", id="cause", text="Cause?",
                options=options, epsilon="0.5", then="stay")  # fmt: skip
    row = re.search(r'<tr id="advice-local">(.*?)</tr>', saved.text, re.S).group(1)
    named = re.findall(r'<span class="family"> ([^<]*)</span>', row)
    assert len(named) == 2 and all(name.endswith("interval") for name in named), named
    assert named[0] != named[1], named  # the review's case: two families
    assert 'id="advice-families"' in saved.text


def test_a_new_question_shows_no_problem_until_it_is_saved(client, storage) -> None:
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    added = client.post(f"{draft}/questions", data={"csrf": csrf, "type": "scale"})
    fresh = client.get(added.headers["Location"])
    assert fresh.status_code == 200 and 'class="problem"' not in fresh.text
    assert 'aria-invalid="true"' not in fresh.text
    # Every type's fields are on the page, those of other types hidden (no reload needed
    # when the type changes: the editor's own script shows them), the scale's shown.
    assert re.search(r'<div data-types="scale">', fresh.text)
    assert re.search(r'<div data-types="numeric" hidden>', fresh.text)
    assert '<script type="module" src="/editor/static/question.js">' in fresh.text
    script = client.get("/editor/static/question.js")
    assert script.status_code == 200 and "javascript" in script.headers["Content-Type"]
    # Saved blank: now the problem shows, beside the field.
    saved = client.post(
        added.headers["Location"].split("?")[0],
        data={"csrf": csrf, "type": "scale", "id": "q1", "text": "", "epsilon": "1"},
    )
    assert saved.status_code == 422
    assert field_problem(saved.text, "text") == "Question: must not be blank"
    # Shown again later (not a new question any more), on its page.
    assert 'id="text-problem"' in client.get(added.headers["Location"].split("?")[0]).text


def test_a_new_draft_lists_what_it_needs_but_marks_no_field_before_a_save(client, storage):
    csrf = sign_in(client, storage)
    made = client.post("/editor/drafts", data={"csrf": csrf}).headers["Location"]
    fresh = client.get(made).text
    assert 'id="draft-problems"' in fresh and 'aria-invalid="true"' not in fresh
    assert 'id="min_batch" name="min_batch" min="1" step="1" value="1000"' in fresh
    client.post(f"{made.split('?')[0]}/survey", data={"csrf": csrf, "title": ""})
    assert field_problem(client.get(made.split("?")[0]).text, "title") == (
        "Title: must not be blank"
    )


def test_every_entry_point_refuses_a_deep_condition_in_words(tmp_path, client, storage) -> None:
    """Files read by create-survey (JSON, YAML) and the API, besides the editor: deeper than
    any parser goes, or merely past the bound, refused in words."""
    from deniable.aggregator.importing.reading import read_definition

    leaf = {"question": "a", "equals": True}

    def definition(depth: int) -> dict:
        condition: dict = leaf
        for _ in range(depth):
            condition = {"all": [condition, leaf]}
        return {
            "format": FORMAT, "id": "s", "title": "S",
            "questions": [{"id": "a", "type": "yes_no", "text": "A?", "epsilon": 1},
                          {"id": "b", "type": "yes_no", "text": "B?", "epsilon": 1,
                           "show_if": condition}],
        }  # fmt: skip

    import json

    deep = tmp_path / "deep.json"
    deep.write_text('{"all":[' * 3000 + json.dumps(leaf) + f", {json.dumps(leaf)}]}}" * 3000)
    with pytest.raises(ValueError, match="nested too deeply"):
        read_definition(str(deep))
    flow = tmp_path / "deep.yaml"
    flow.write_text("{all: [" * 3000 + "{question: a, equals: true}" + ", {}]}" * 3000)
    with pytest.raises(ValueError, match="nested too deeply"):
        read_definition(str(flow))
    if not QUESTIONNAIRE:
        return
    mid = tmp_path / "mid.json"
    mid.write_text(json.dumps(definition(30)))
    with pytest.raises(InvalidSurvey, match="nested too deeply"):
        Survey.from_dict(read_definition(str(mid)).definition)
    token = storage.create_operator_token("api")
    refused = client.post(
        "/api/v1/surveys",
        json={"definition": definition(10)},  # within the body's own bound of 64
        headers={"Authorization": f"Bearer {token}"},
    )
    assert refused.status_code == 422 and "nested too deeply" in refused.json["detail"]
