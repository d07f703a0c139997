"""The translation page (`serve --ui`) in a real browser: Debian's chromium driven by Playwright.

Each test loads the page from a live `ModelServer`, types as a person would and
checks what the page shows against the REST API's own answer to the request
the page sent, and against the stand-in export's NumPy reference
(`helpers.stand_in_export.reference_outputs`).
"""

from __future__ import annotations

import contextlib
import json

import numpy as np
import pytest
from helpers.stand_in_export import reference_outputs
from helpers.translation_page import (
    MAX_REQUEST_BYTES,
    choose_model,
    chromium_missing,
    heatmap,
    post_json,
    start_server,
)

pytest.importorskip("pytest_playwright", reason="pytest-playwright is not installed")
if chromium_missing():
    pytest.skip(chromium_missing(), allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402 - after the skips

SENTENCES = ["the cat sat on the mat", "a dog"]


@pytest.fixture()
def ui(page, page_server):
    """The page, loaded from the module's server."""
    page.set_default_timeout(20_000)
    page.goto(page_server.rest_url + "/")
    page.wait_for_selector("body[data-ready=true]")
    return page


@contextlib.contextmanager
def beam_page(page, trained_models, field: str):
    """Our server with the trained exports and the page on its tiny model with beam search
    chosen; skips when the export's `search` has no `field` input; stops the server after."""
    server = start_server(trained_models)
    try:
        page.set_default_timeout(60_000)
        page.goto(server.rest_url + "/")
        choose_model(page, "tiny")
        page.check('input[name="strategy"][value="beam"]')
        if not page.is_visible(field):
            note = page.locator("#decoding-info").inner_text()
            pytest.skip(f"the export has no search signature with {field[1:]}: {note}")
        yield server
    finally:
        server.stop(grace=0)


def _translate(page, text: str, strategy: str = "greedy") -> dict:
    """Types `text`, picks `strategy`, presses Ctrl+Enter; the :predict request the page sent."""
    page.check(f'input[name="strategy"][value="{strategy}"]')
    page.fill("#text", text)
    with page.expect_request(lambda request: request.url.endswith(":predict")) as sent:
        page.press("#text", "Control+Enter")
    # The form is busy from before the request until the answer is shown.
    page.locator("#translate-form:not([aria-busy])").wait_for()
    return sent.value


@pytest.mark.parametrize(
    ("strategy", "signature"), [("greedy", "serving_default"), ("beam", "beam_search")]
)
def test_translations_and_heatmaps_equal_the_rest_answer(ui, page_server, strategy, signature):
    choose_model(ui, "translator")
    request = _translate(ui, "\n".join(SENTENCES) + "\n\n", strategy)
    body = json.loads(request.post_data)
    # The stand-in's signatures have no decoding inputs: the page sends the text only.
    assert body == {"signature_name": signature, "inputs": {"text": SENTENCES}}
    assert request.url == page_server.rest_url + "/v1/models/translator:predict"
    answer = post_json(request.url, body)["outputs"]
    reference = reference_outputs(SENTENCES, signature=signature)

    articles = ui.locator("article.sentence")
    assert articles.count() == len(SENTENCES)
    for i, sentence in enumerate(SENTENCES):
        article = articles.nth(i)
        assert article.locator("h2.source").inner_text() == sentence
        assert article.locator(".translation").all_inner_texts() == [answer["translation"][i]]
        assert answer["translation"][i] == reference["translation"][i].decode()
        score = float(article.locator(".score").get_attribute("data-score"))
        assert score == pytest.approx(answer["score"][i], abs=1e-6)
        assert score == pytest.approx(float(reference["score"][i]), abs=1e-6)

        shown = heatmap(ui, i)
        length = answer["length"][i]
        source = [token for token in answer["source_tokens"][i] if token]
        assert shown["rows"] == answer["tokens"][i][:length]
        assert shown["columns"] == source
        assert shown["cells"] == length * len(source)
        expected = np.array(answer["attention"][i])[:length, : len(source)]
        np.testing.assert_allclose(shown["weights"], expected, atol=1e-6, rtol=0)
        np.testing.assert_allclose(
            shown["weights"], reference["attention"][i][:length, : len(source)], atol=1e-6, rtol=0
        )


def test_hovering_a_cell_shows_its_weight(ui):
    choose_model(ui, "translator")
    _translate(ui, "a dog")
    cell = ui.locator('article[data-index="0"] td.cell[data-row="0"][data-column="1"]')
    cell.hover()
    weight = float(cell.get_attribute("data-weight"))
    readout = ui.locator('article[data-index="0"] .readout').inner_text()
    # Row 0 is "DOG" (the stand-in reverses), column 1 the source's "dog".
    assert readout == f"DOG \u2192 dog: {weight:.4f}"
    assert cell.get_attribute("title") == f"DOG \u2192 dog: {weight:.4f}"


def test_empty_input_shows_the_error_line_and_sends_nothing(ui):
    choose_model(ui, "translator")
    sent = []
    ui.on("request", lambda request: sent.append(request.url))
    ui.fill("#text", "  \n \n")
    ui.click("#translate")
    assert ui.locator("#error").inner_text() == "Type a sentence to translate (one per line)."
    assert not [url for url in sent if url.endswith(":predict")]
    assert ui.locator("article.sentence").count() == 0


def test_a_model_without_attention_outputs_shows_translations_and_says_so(ui):
    choose_model(ui, "plain")
    _translate(ui, "a dog\nthe cat")
    assert ui.locator(".translation").all_inner_texts() == ["A DOG", "THE CAT"]
    assert ui.locator(".score").evaluate_all("nodes => nodes.map((n) => n.dataset.score)") == [
        "-2",
        "-2",
    ]
    assert ui.locator("table.heatmap").count() == 0
    assert ui.locator("#error").inner_text() == (
        "This model returns no attention (missing outputs: tokens, source_tokens, attention); "
        "translations are shown without heatmaps."
    )
    # Beam search and sampling are off: the model has neither signature.
    assert ui.is_disabled('input[name="strategy"][value="beam"]')
    assert ui.is_disabled('input[name="strategy"][value="sampling"]')


def test_a_server_error_is_shown_on_the_error_line(ui):
    choose_model(ui, "translator")
    # More text than the server's --max_request_bytes: it answers 413 with {"error": ...}.
    _translate(ui, "a dog\n" * 1000)
    error = ui.locator("#error").inner_text()
    assert error.startswith("The server answered 413: Request body of ")
    assert error.endswith(f" bytes exceeds the limit of {MAX_REQUEST_BYTES} bytes")
    assert ui.locator("article.sentence").count() == 0


def test_the_model_menu_lists_the_servers_models_and_versions(ui):
    ui.wait_for_selector("#model")
    names = ui.locator("#model option").evaluate_all("options => options.map((o) => o.value)")
    assert names == ["plain", "translator"]
    choose_model(ui, "translator")
    versions = ui.locator("#version option").all_inner_texts()
    assert versions == ["latest", "1"]


def test_a_stopped_server_is_shown_on_the_error_line(page, page_models):
    server = start_server(page_models)
    try:
        page.set_default_timeout(20_000)
        page.goto(server.rest_url + "/")
        choose_model(page, "translator")
    finally:
        server.stop(grace=0)
    page.fill("#text", "a dog")
    page.press("#text", "Control+Enter")
    expect(page.locator("#error")).not_to_be_empty()
    assert page.locator("#error").inner_text().startswith("Could not reach the server")
    assert page.locator("article.sentence").count() == 0


def test_the_page_is_readable_400_pixels_wide_and_every_control_is_labelled(ui):
    ui.set_viewport_size({"width": 400, "height": 800})
    choose_model(ui, "translator")
    _translate(ui, "the cat sat on the mat the cat sat on the mat again and again")
    # Nothing but the heatmap's own box scrolls sideways.
    assert ui.evaluate("document.scrollingElement.scrollWidth") <= 400
    unlabelled = ui.evaluate(
        """() => [...document.querySelectorAll("input, select, textarea, button")]
            .filter((c) => c.offsetParent !== null)
            .filter((c) => !(c.labels && c.labels.length) && !c.textContent.trim()
                && !c.getAttribute("aria-label"))
            .map((c) => c.id || c.name)"""
    )
    assert unlabelled == []


@pytest.mark.slow
def test_n_best_and_sampling_with_a_trained_export(page, trained_models):
    """A real export (trained, exported): beam search with n-best 3, then seeded sampling."""
    with beam_page(page, trained_models, "#n-best"):
        page.fill("#n-best", "3")
        sentences = ["I see the cat .", "we like a big red apple ."]
        request = _translate(page, "\n".join(sentences), "beam")
        body = json.loads(request.post_data)
        # Beam search with options goes to search; beam_search stays text-only.
        assert body["signature_name"] == "search"
        assert body["inputs"]["text"] == sentences and body["inputs"]["n_best"] == 3
        # The fields left empty are sent with the SignatureDef's defaults (REST fills none),
        # the beam width with the page's 4 (search's own default, 1, is greedy).
        assert body["inputs"]["beam_width"] == 4
        assert body["inputs"]["length_penalty"] == pytest.approx(0.6)
        assert body["inputs"]["max_output_length"] == 10
        answer = post_json(request.url, body)["outputs"]
        assert page.locator("#error").inner_text() == ""
        for i in range(len(sentences)):
            article = page.locator(f'article[data-index="{i}"]')
            assert article.locator(".translation").all_inner_texts() == answer["translation"][i]
            scores = article.locator(".score").evaluate_all("ns => ns.map((n) => n.dataset.score)")
            np.testing.assert_allclose([float(x) for x in scores], answer["score"][i], atol=1e-6)
            confidences = article.locator(".confidence").evaluate_all(
                "ns => ns.map((n) => n.dataset.confidence)"
            )
            np.testing.assert_allclose(
                [float(x) for x in confidences], answer["confidence"][i], atol=1e-6
            )
            # The third translation's own heatmap, after clicking it.
            article.locator('button.hypothesis-select[data-rank="2"]').click()
            shown = heatmap(page, i, rank=2)
            length = answer["length"][i][2]
            source = [token for token in answer["source_tokens"][i] if token]
            assert shown["rows"] == answer["tokens"][i][2][:length]
            shown_probabilities = article.locator(".token-probability").evaluate_all(
                "ns => ns.map((n) => Number(n.dataset.probability))"
            )
            np.testing.assert_allclose(
                shown_probabilities, np.exp(answer["token_scores"][i][2][:length]), rtol=1e-6
            )
            assert shown["columns"] == source
            assert shown["cells"] == length * len(source)
            expected = np.array(answer["attention"][i][2])[:length, : len(source)]
            np.testing.assert_allclose(shown["weights"], expected, atol=1e-6, rtol=0)

        # Greedy through search: beam width 1 (the hidden fields send the defaults), the
        # translations of the text-only serving_default.
        request = _translate(page, "\n".join(sentences), "greedy")
        body = json.loads(request.post_data)
        assert body["signature_name"] == "search"
        assert (body["inputs"]["beam_width"], body["inputs"]["n_best"]) == (1, 1)
        greedy = post_json(request.url, {"inputs": {"text": sentences}})["outputs"]
        assert page.locator(".translation").all_inner_texts() == greedy["translation"]

        page.check('input[name="strategy"][value="sampling"]')
        page.fill("#seed", "7")
        page.fill("#temperature", "0.5")
        request = _translate(page, "\n".join(sentences), "sampling")
        body = json.loads(request.post_data)
        assert body["signature_name"] == "sample"
        assert (body["inputs"]["seed"], body["inputs"]["temperature"]) == (7, 0.5)
        # The same seed draws the same translations: the page shows the REST answer.
        answer = post_json(request.url, body)["outputs"]
        assert page.locator(".translation").all_inner_texts() == answer["translation"]


@pytest.mark.slow
def test_glossary_constraints_apply_per_sentence_with_a_trained_export(page, trained_models):
    """The Constraints field with glossary entries: an entry applies to the sentences that
    hold its source term (whole words, any case), so its target is in their translations;
    an entry whose source term a sentence lacks is not sent for it, and that sentence
    translates as with no constraints."""
    with beam_page(page, trained_models, "#constraints"):
        page.fill("#constraints", "Cat = pomme\ndog\tchien")
        sentences = ["I see the cat .", "we like a big red apple ."]
        request = _translate(page, "\n".join(sentences), "beam")
        body = json.loads(request.post_data)
        assert body["signature_name"] == "search"
        # "cat" occurs in the first sentence only, "dog" in neither: one string per
        # sentence, phrases separated by tabs, "" for none.
        assert body["inputs"]["constraints"] == ["pomme", ""]
        answer = post_json(request.url, body)["outputs"]
        assert page.locator("#error").inner_text() == ""
        shown = page.locator(".translation").all_inner_texts()
        assert shown == answer["translation"]
        first = answer["tokens"][0][: answer["length"][0]]
        assert "pomme" in first and "pomme" in shown[0].split()
        # The second sentence decodes as with no constraints at all.
        plain = post_json(request.url, {**body, "inputs": {**body["inputs"], "constraints": []}})
        assert shown[1] == plain["outputs"]["translation"][1]
