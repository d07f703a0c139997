// The translation page of `keras-attention serve --ui`. Plain JavaScript, no dependencies.
//
// Everything it shows comes from the server's public REST API:
//   GET  /v1/models                                  the models and their versions (listing)
//   GET  /v1/models/NAME                             version status (when there is no listing)
//   GET  /v1/models/NAME[/versions/N]/metadata       the signatures: inputs, outputs, defaults
//   POST /v1/models/NAME[/versions/N]:predict        {"signature_name", "inputs": {"text", ...}}
// and the outputs of the translation contract: translation, score, length, tokens,
// source_tokens, attention, and (exports that have them) token_scores, confidence.
"use strict";

(function () {
  const DEFAULT_SIGNATURE = "serving_default";
  const BEAM_SIGNATURE = "beam_search";
  // Greedy and beam search with per-request inputs. serving_default and beam_search stay
  // text-only (TF Serving's REST API fills no defaults, batching refuses scalar inputs), so
  // the page calls search when the model has it, else those two without controls.
  const SEARCH_SIGNATURE = "search";
  // The beam width sent when the field is empty (search's own default, 1, is greedy): the
  // export command's default --beam-width.
  const PAGE_BEAM_WIDTH = 4;
  const SAMPLING_SIGNATURES = ["sampling", "sample", "random_sampling"];
  const ATTENTION_OUTPUTS = ["tokens", "source_tokens", "attention"];
  // Confidences and token probabilities below this are marked for checking.
  const LOW_CONFIDENCE = 0.5;
  // Signature input alias -> the id of its control. An input is sent when its control is
  // shown (the chosen signature has it): its value, or the export's default when empty.
  const DECODING_INPUTS = {
    beam_width: "beam-width",
    n_best: "n-best",
    length_penalty: "length-penalty",
    temperature: "temperature",
    top_k: "top-k",
    top_p: "top-p",
    seed: "seed",
    max_output_length: "max-output-length",
    prefix: "prefix",
    next_words: "next-words",
    constraints: "constraints",
  };
  // Inputs that carry text, one string per sentence ([]: none), with no default to show.
  const TEXT_INPUTS = new Set(["prefix", "constraints"]);
  const INTEGER_TYPES = new Set(["DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64", "DT_UINT8",
    "DT_UINT16", "DT_UINT32", "DT_UINT64"]);

  const $ = (id) => document.getElementById(id);
  const form = $("translate-form");
  const modelSelect = $("model");
  const modelName = $("model-name");
  const modelNameLabel = $("model-name-label");
  const versionSelect = $("version");
  const modelInfo = $("model-info");
  const decodingInfo = $("decoding-info");
  const textBox = $("text");
  const errorLine = $("error");
  const busy = $("busy");
  const results = $("results");

  const state = {
    listing: null, // [{name, versions: [version string]}] or null without a listing
    signatures: null, // signature name -> SignatureDef (from the metadata), or null
    metadataKey: "", // the model/version the signatures belong to
    request: 0, // the latest translate request's number (older answers are dropped)
    wantedVersion: "", // from the address (?model=NAME&version=N), until versions are known
  };

  class PageError extends Error {}

  // --- REST ---------------------------------------------------------------------------------

  async function callApi(method, path, body) {
    let response;
    try {
      response = await fetch(path, {
        method: method,
        headers: body === undefined ? {} : { "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
      });
    } catch (error) {
      throw new PageError(`Could not reach the server (${error.message}). Is it running?`);
    }
    const text = await response.text();
    let document_ = null;
    try {
      document_ = JSON.parse(text);
    } catch (error) {
      document_ = null;
    }
    if (!response.ok) {
      const message = document_ && typeof document_.error === "string"
        ? document_.error : text.slice(0, 300);
      const error = new PageError(`The server answered ${response.status}: ${message}`);
      error.status = response.status;
      throw error;
    }
    if (document_ === null) {
      throw new PageError(`The server's answer to ${path} is not JSON.`);
    }
    return document_;
  }

  function modelPath(name, version) {
    let path = "/v1/models/" + encodeURIComponent(name);
    if (version) path += "/versions/" + encodeURIComponent(version);
    return path;
  }

  // --- Models and versions ------------------------------------------------------------------

  // The listing's models as [{name, versions}], the available versions newest first.
  function parseListing(document_) {
    const models = Array.isArray(document_) ? document_ : document_ && document_.models;
    if (!Array.isArray(models)) return null;
    return models.map((model) => {
      const entries = model.versions || model.model_version_status || [];
      const versions = entries
        .filter((entry) => typeof entry !== "object" || !entry.state || entry.state === "AVAILABLE")
        .map((entry) => String(typeof entry === "object" ? entry.version : entry));
      versions.sort((a, b) => Number(b) - Number(a));
      return { name: String(model.name || model.model_name || ""), versions: versions };
    }).filter((model) => model.name);
  }

  function parseStatus(document_) {
    const entries = (document_ && document_.model_version_status) || [];
    const versions = entries.filter((entry) => entry.state === "AVAILABLE")
      .map((entry) => String(entry.version));
    versions.sort((a, b) => Number(b) - Number(a));
    return versions;
  }

  function fillVersions(versions) {
    const chosen = state.wantedVersion || versionSelect.value;
    state.wantedVersion = "";
    versionSelect.replaceChildren(new Option("latest", ""));
    for (const version of versions) versionSelect.add(new Option(version, version));
    if (versions.includes(chosen)) versionSelect.value = chosen;
  }

  function currentModel() {
    return state.listing === null ? modelName.value.trim() : modelSelect.value;
  }

  async function loadListing() {
    let listing = null;
    try {
      listing = parseListing(await callApi("GET", "/v1/models"));
    } catch (error) {
      listing = null;
      if (!(error instanceof PageError) || !error.status) {
        showError(error.message);
      }
    }
    state.listing = listing;
    if (listing === null) {
      // A server without the listing (TF Serving has none): the model's name is typed.
      modelSelect.parentElement.hidden = true;
      modelNameLabel.hidden = false;
      if (!modelName.value) modelName.value = "default";
      modelInfo.textContent = "This server lists no models: type the model's name " +
        "(its --model_name, or a name in its --model_config_file).";
      return;
    }
    modelSelect.replaceChildren();
    for (const model of listing) {
      const option = new Option(model.name, model.name);
      if (!model.versions.length) option.textContent = `${model.name} (no version available)`;
      modelSelect.add(option);
    }
    if (!listing.length) modelInfo.textContent = "The server serves no models.";
  }

  async function loadVersions() {
    const name = currentModel();
    if (!name) return;
    if (state.listing !== null) {
      const model = state.listing.find((entry) => entry.name === name);
      fillVersions(model ? model.versions : []);
      return;
    }
    try {
      fillVersions(parseStatus(await callApi("GET", modelPath(name))));
    } catch (error) {
      fillVersions([]);
      throw error;
    }
  }

  async function loadSignatures() {
    const name = currentModel();
    const version = versionSelect.value;
    const key = name + "\u0000" + version;
    if (!name) {
      state.signatures = null;
      state.metadataKey = "";
      updateDecoding();
      return;
    }
    if (state.metadataKey === key && state.signatures !== null) return;
    const document_ = await callApi("GET", modelPath(name, version) + "/metadata");
    const map = (((document_ || {}).metadata || {}).signature_def || {}).signature_def || {};
    state.signatures = map;
    state.metadataKey = key;
    const served = (document_.model_spec && document_.model_spec.version) || version || "latest";
    modelInfo.textContent = `${name}, version ${served}: signatures ` +
      Object.keys(map).filter((signature) => !signature.startsWith("__")).sort().join(", ") + ".";
    updateDecoding();
  }

  async function refreshModel() {
    clearError();
    try {
      await loadVersions();
      await loadSignatures();
    } catch (error) {
      state.signatures = null;
      state.metadataKey = "";
      updateDecoding();
      showError(error.message);
    }
  }

  // --- Decoding controls ------------------------------------------------------------------

  function samplingSignature() {
    if (!state.signatures) return null;
    for (const name of SAMPLING_SIGNATURES) {
      if (state.signatures[name]) return name;
    }
    for (const name of Object.keys(state.signatures).sort()) {
      if ((state.signatures[name].inputs || {}).temperature) return name;
    }
    return null;
  }

  function strategy() {
    return form.querySelector('input[name="strategy"]:checked').value;
  }

  // The signature the chosen strategy calls (null: this model has none for it).
  function chosenSignature() {
    const choice = strategy();
    if (choice === "sampling") return samplingSignature();
    if (hasSearch()) return SEARCH_SIGNATURE;
    if (choice === "beam") return has(BEAM_SIGNATURE) ? BEAM_SIGNATURE : null;
    return DEFAULT_SIGNATURE;
  }

  function hasSearch() {
    return Boolean(state.signatures && state.signatures[SEARCH_SIGNATURE]);
  }

  function has(signature) {
    return state.signatures === null || Boolean(state.signatures[signature]);
  }

  function signatureInputs(signature) {
    if (!state.signatures || !signature || !state.signatures[signature]) return {};
    return state.signatures[signature].inputs || {};
  }

  // The export's default of a decoding input (the SignatureDef's `defaults`), or null.
  function defaultValue(signature, alias) {
    const defaults = (state.signatures && signature && state.signatures[signature] &&
      state.signatures[signature].defaults) || {};
    const tensor = defaults[alias];
    for (const field of ["int_val", "int64_val", "float_val", "double_val"]) {
      const values = tensor && tensor[field];
      if (Array.isArray(values) && values.length) {
        // float_val holds float32 values: 7 significant digits give them back (0.6).
        return Number(Number(values[0]).toPrecision(7));
      }
    }
    return null;
  }

  // What an empty (or hidden) field sends: the export's default, but a beam width above 1
  // for beam search through search.
  function fallbackValue(signature, alias) {
    if (signature === SEARCH_SIGNATURE && alias === "beam_width" && strategy() === "beam") {
      return PAGE_BEAM_WIDTH;
    }
    const value = defaultValue(signature, alias);
    // A zero default may come back as an empty TensorProto: none is 0.
    return value === null && alias === "next_words" ? 0 : value;
  }

  function defaultText(signature, alias) {
    const value = fallbackValue(signature, alias);
    if (value === null) return "default";
    return alias === "seed" && value === -1 ? "-1 (random)" : String(value);
  }

  function updateDecoding() {
    const sampling = samplingSignature();
    const available = {
      greedy: has(DEFAULT_SIGNATURE) || hasSearch(),
      beam: has(BEAM_SIGNATURE) || hasSearch(),
      sampling: state.signatures === null ? false : sampling !== null,
    };
    for (const radio of form.querySelectorAll('input[name="strategy"]')) {
      radio.disabled = !available[radio.value];
      radio.parentElement.classList.toggle("unavailable", radio.disabled);
      radio.parentElement.title = radio.disabled ? "this model has no signature for it" : "";
    }
    const checked = form.querySelector('input[name="strategy"]:checked');
    if (checked.disabled) {
      const first = form.querySelector('input[name="strategy"]:not(:disabled)');
      if (first) first.checked = true;
    }
    const choice = strategy();
    const signature = chosenSignature();
    const inputs = signatureInputs(signature);
    // A control shows when the signature has its input and it belongs to the strategy
    // (search also takes beam_width and n_best: beam width 1 is greedy search).
    for (const label of document.querySelectorAll("#options [data-input]")) {
      const alias = label.dataset.input;
      const mine = label.dataset.strategy === choice || label.dataset.strategy === "any";
      label.hidden = !(alias in inputs && mine);
      if (!TEXT_INPUTS.has(alias)) {
        $(DECODING_INPUTS[alias]).placeholder = defaultText(signature, alias);
      }
    }
    const notes = [];
    if (signature) notes.push(`Calls the ${signature} signature.`);
    if (choice === "beam" && state.signatures && !("beam_width" in inputs)) {
      notes.push("Its beam width is fixed by the export.");
    }
    if (choice === "beam" && state.signatures && !("n_best" in inputs)) {
      notes.push("It returns one translation per sentence (no n_best input).");
    }
    decodingInfo.textContent = notes.join(" ");
  }

  // --- Request ----------------------------------------------------------------------------

  function sentences() {
    return textBox.value.split(/\r?\n/).map((line) => line.trim()).filter((line) => line);
  }

  // Whether `term` occurs in `text` as whole words, ignoring case (as the command line's
  // --glossary reads it).
  function occurs(term, text) {
    const words = term.trim().split(/\s+/).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    return new RegExp(`(?<![\\p{L}\\p{N}_])${words.join("\\s+")}(?![\\p{L}\\p{N}_])`, "iu")
      .test(text);
  }

  // The constraints field: one line per phrase every translation must contain, or
  // `source = target` (or source<TAB>target), a glossary entry whose target each
  // sentence holding the source must contain. One tab-separated string per sentence.
  function sentenceConstraints(raw, texts) {
    const lines = raw.split(/\r?\n/).map((line) => line.trim()).filter((line) => line);
    return texts.map((text) => {
      const phrases = [];
      for (const line of lines) {
        const entry = line.includes("\t") ? line.split("\t") : line.split(" = ");
        if (entry.length === 2 && entry[0].trim() && entry[1].trim()) {
          if (occurs(entry[0], text)) phrases.push(entry[1].trim());
        } else {
          phrases.push(line);
        }
      }
      return [...new Set(phrases)].join("\t");
    });
  }

  function decodingInputs(signature, texts) {
    const batch = texts.length;
    const inputs = {};
    for (const [alias, spec] of Object.entries(signatureInputs(signature))) {
      const id = DECODING_INPUTS[alias];
      if (!id) continue;
      const control = $(id);
      // An empty or hidden field sends the export's default: TF Serving's REST API wants
      // every input of the signature and fills none itself.
      const raw = control.parentElement.hidden ? "" : control.value.trim();
      if (alias === "prefix") {  // one string per sentence, or [] (the default: none)
        inputs.prefix = raw === "" ? [] : new Array(batch).fill(raw);
        continue;
      }
      if (alias === "constraints") {  // one string per sentence, or [] (the default: none)
        inputs.constraints = raw === "" ? [] : sentenceConstraints(raw, texts);
        continue;
      }
      const fallback = fallbackValue(signature, alias);
      if (raw === "" && fallback === null) continue;
      const number = raw === "" ? fallback : Number(raw);
      const integer = INTEGER_TYPES.has(spec.dtype);
      if (!Number.isFinite(number) || (integer && !Number.isInteger(number))) {
        const name = control.parentElement.firstChild.textContent.trim();
        throw new PageError(`${name} must be ${integer ? "a whole number" : "a number"}; ` +
          `received "${raw}".`);
      }
      const shape = spec.tensor_shape || {};
      const rank = shape.unknown_rank ? 0 : (shape.dim || []).length;
      inputs[alias] = rank === 0 ? number : new Array(batch).fill(number);
    }
    return inputs;
  }

  function buildRequest(texts) {
    const signature = chosenSignature();
    if (!signature) throw new PageError("This model has no signature for that decoding.");
    const inputs = Object.assign({ text: texts }, decodingInputs(signature, texts));
    return { signature_name: signature, inputs: inputs };
  }

  // --- Response ---------------------------------------------------------------------------

  function text(value) {
    if (value && typeof value === "object" && typeof value.b64 === "string") {
      const bytes = Uint8Array.from(atob(value.b64), (c) => c.charCodeAt(0));
      return new TextDecoder().decode(bytes);
    }
    return value === null || value === undefined ? "" : String(value);
  }

  function depth(value) {
    let rank = 0;
    while (Array.isArray(value)) {
      rank += 1;
      value = value[0];
    }
    return rank;
  }

  // The hypotheses of sentence i: [{text, score, length, tokens, sourceTokens, attention,
  // probabilities, confidence}] (probabilities = exp(token_scores[:length])),
  // trimmed as the client's Translation is: tokens[:length], the source tokens up to the
  // last non-empty one, attention[:length, :len(source tokens)].
  function hypotheses(outputs, i) {
    const nBest = Array.isArray(outputs.translation[i]);
    const pick = (alias, h, rankPerHypothesis) => {
      const value = outputs[alias] === undefined ? undefined : outputs[alias][i];
      if (value === undefined || !nBest) return value;
      return depth(value) >= rankPerHypothesis + 1 ? value[h] : (h === 0 ? value : undefined);
    };
    let source = outputs.source_tokens ? outputs.source_tokens[i].map(text) : null;
    if (source) {
      let end = source.length;
      while (end > 0 && source[end - 1] === "") end -= 1;
      source = source.slice(0, end);
    }
    const count = nBest ? outputs.translation[i].length : 1;
    // The most probable words after the prefix: [batch, k], the same for every hypothesis.
    const words = Array.isArray(outputs.next_words) ? outputs.next_words[i] : null;
    const wordScores = Array.isArray(outputs.next_word_scores) ? outputs.next_word_scores[i] : null;
    const nextWords = words && wordScores && words.length
      ? words.map((word, k) => ({ word: text(word), probability: Math.exp(wordScores[k]) }))
      : null;
    const list = [];
    for (let h = 0; h < count; h += 1) {
      const score = pick("score", h, 0);
      const length = pick("length", h, 0);
      let tokens = pick("tokens", h, 1);
      let attention = pick("attention", h, 2);
      const confidence = pick("confidence", h, 0);
      let probabilities = pick("token_scores", h, 1);
      if (tokens) {
        tokens = tokens.map(text);
        if (typeof length === "number") tokens = tokens.slice(0, length);
        else {
          let end = tokens.length;
          while (end > 0 && tokens[end - 1] === "") end -= 1;
          tokens = tokens.slice(0, end);
        }
      }
      if (attention && tokens && source) {
        attention = attention.slice(0, tokens.length).map((row) => row.slice(0, source.length));
      } else {
        attention = null;
      }
      if (Array.isArray(probabilities) && tokens) {
        probabilities = probabilities.slice(0, tokens.length).map((logProb) => Math.exp(logProb));
      } else {
        probabilities = null;
      }
      list.push({
        text: text(nBest ? outputs.translation[i][h] : outputs.translation[i]),
        confidence: typeof confidence === "number" ? confidence : null,
        nextWords: nextWords,
        probabilities: probabilities,
        score: typeof score === "number" ? score : null,
        length: typeof length === "number" ? length : null,
        tokens: tokens || null,
        sourceTokens: source,
        attention: attention,
      });
    }
    return list;
  }

  // --- Rendering --------------------------------------------------------------------------

  function element(tag, className, content) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  function formatWeight(weight) {
    return weight.toFixed(4);
  }

  function heatmap(hypothesis, rank) {
    const table = element("table", "heatmap");
    const rows = hypothesis.tokens.length;
    const columns = hypothesis.sourceTokens.length;
    table.dataset.rows = String(rows);
    table.dataset.columns = String(columns);
    table.dataset.rank = String(rank);
    table.setAttribute("aria-label", `Attention of translation ${rank + 1}: ` +
      "a row per target token, a column per source token");
    const head = element("thead");
    const headRow = element("tr");
    headRow.append(element("th", "corner", "target \\ source"));
    hypothesis.sourceTokens.forEach((token, column) => {
      const th = element("th", "source-token");
      th.scope = "col";
      th.dataset.column = String(column);
      th.append(element("span", "", token));
      headRow.append(th);
    });
    head.append(headRow);
    table.append(head);
    const body = element("tbody");
    hypothesis.tokens.forEach((token, row) => {
      const tr = element("tr");
      const th = element("th", "target-token", token);
      th.scope = "row";
      th.dataset.row = String(row);
      tr.append(th);
      const weights = hypothesis.attention[row] || [];
      for (let column = 0; column < columns; column += 1) {
        const weight = Number(weights[column]);
        const td = element("td", "cell");
        td.dataset.row = String(row);
        td.dataset.column = String(column);
        td.dataset.weight = String(weight);
        td.title = `${token} \u2192 ${hypothesis.sourceTokens[column]}: ${formatWeight(weight)}`;
        td.style.backgroundColor = `rgba(29, 78, 216, ${Math.min(Math.max(weight, 0), 1)})`;
        tr.append(td);
      }
      body.append(tr);
    });
    table.append(body);
    return table;
  }

  // Each output token with the model's probability of it; the unlikely ones marked.
  function tokenProbabilities(hypothesis) {
    const p = element("p", "token-probabilities");
    p.setAttribute("aria-label", "Output tokens with the model's probability of each");
    hypothesis.tokens.forEach((token, t) => {
      const probability = hypothesis.probabilities[t];
      const span = element("span", "token-probability", token);
      span.dataset.probability = String(probability);
      span.title = `${token}: ${probability.toFixed(3)}`;
      if (probability < LOW_CONFIDENCE) span.classList.add("low");
      p.append(span, " ");
    });
    return p;
  }

  function renderSentence(source, list, index) {
    const article = element("article", "sentence");
    article.dataset.index = String(index);
    article.append(element("h2", "source", source));
    const ol = element("ol", "hypotheses");
    const view = element("div", "heatmap-view");
    const readout = element("p", "readout note", "Point at a cell for its weight.");
    readout.setAttribute("aria-live", "polite");
    const show = (rank) => {
      for (const button of ol.querySelectorAll("button")) {
        button.setAttribute("aria-pressed", String(button.dataset.rank === String(rank)));
      }
      const hypothesis = list[rank];
      view.replaceChildren();
      if (hypothesis.probabilities) view.append(tokenProbabilities(hypothesis));
      if (hypothesis.nextWords) {
        const next = element("p", "next-words", "Next words: ");
        hypothesis.nextWords.forEach(({ word, probability }) => {
          const span = element("span", "next-word", `${word} (${probability.toFixed(2)})`);
          span.dataset.word = word;
          span.dataset.probability = String(probability);
          next.append(span, " ");
        });
        view.append(next);
      }
      if (hypothesis.attention) {
        const wrap = element("div", "heatmap-wrap");
        wrap.append(heatmap(hypothesis, rank));
        const title = element("p", "heatmap-title note",
          `Attention of translation ${rank + 1}: target tokens (rows) \u00d7 source tokens (columns)`);
        view.append(title, wrap, readout);
      } else if (list[0].attention) {
        view.append(element("p", "note", "The model returns attention for its best translation only."));
      }
    };
    list.forEach((hypothesis, rank) => {
      const li = element("li", "hypothesis");
      li.dataset.rank = String(rank);
      const button = element("button", "hypothesis-select");
      button.type = "button";
      button.dataset.rank = String(rank);
      button.append(element("span", "translation", hypothesis.text));
      if (hypothesis.score !== null) {
        const score = element("span", "score", `score ${hypothesis.score.toFixed(3)}`);
        score.dataset.score = String(hypothesis.score);
        button.append(score);
      }
      if (hypothesis.confidence !== null) {
        const confidence = element("span", "confidence",
          `confidence ${hypothesis.confidence.toFixed(2)}`);
        confidence.dataset.confidence = String(hypothesis.confidence);
        if (hypothesis.confidence < LOW_CONFIDENCE) confidence.classList.add("low");
        button.append(confidence);
      }
      button.addEventListener("click", () => show(rank));
      li.append(button);
      ol.append(li);
    });
    article.append(ol, view);
    show(0);
    return article;
  }

  function render(texts, outputs) {
    results.replaceChildren();
    if (outputs === null || typeof outputs !== "object" || Array.isArray(outputs) ||
        !Array.isArray(outputs.translation)) {
      throw new PageError("The model's answer has no 'translation' output: is it a translator?");
    }
    const missing = ATTENTION_OUTPUTS.filter((alias) => !Array.isArray(outputs[alias]));
    texts.forEach((source, i) => {
      results.append(renderSentence(source, hypotheses(outputs, i), i));
    });
    if (missing.length) {
      showError(`This model returns no attention (missing outputs: ${missing.join(", ")}); ` +
        "translations are shown without heatmaps.");
    }
  }

  function pointAt(event) {
    const cell = event.target.closest ? event.target.closest("td.cell") : null;
    if (!cell) return;
    const table = cell.closest("table");
    const row = table.querySelector(`th.target-token[data-row="${cell.dataset.row}"]`);
    const column = table.querySelector(`th.source-token[data-column="${cell.dataset.column}"]`);
    for (const marked of table.querySelectorAll(".marked")) marked.classList.remove("marked");
    row.classList.add("marked");
    column.classList.add("marked");
    const readout = table.closest(".heatmap-view").querySelector(".readout");
    readout.textContent = `${row.textContent} \u2192 ${column.textContent}: ` +
      formatWeight(Number(cell.dataset.weight));
  }

  // --- Errors and submit ------------------------------------------------------------------

  function showError(message) {
    errorLine.textContent = message;
  }

  function clearError() {
    errorLine.textContent = "";
  }

  async function translate() {
    clearError();
    const texts = sentences();
    if (!texts.length) {
      results.replaceChildren();
      showError("Type a sentence to translate (one per line).");
      textBox.focus();
      return;
    }
    const name = currentModel();
    if (!name) {
      showError(state.listing === null ? "Type the model's name." : "Choose a model.");
      return;
    }
    const number = (state.request += 1);
    busy.hidden = false;
    form.setAttribute("aria-busy", "true");
    try {
      await loadSignatures();
      const request = buildRequest(texts);
      const answer = await callApi("POST", modelPath(name, versionSelect.value) + ":predict",
        request);
      if (number !== state.request) return;
      render(texts, answer.outputs);
    } catch (error) {
      if (number !== state.request) return;
      showError(error instanceof PageError ? error.message : `Unexpected error: ${error}`);
    } finally {
      if (number === state.request) {
        busy.hidden = true;
        form.removeAttribute("aria-busy");
      }
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    translate();
  });
  form.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      translate();
    }
  });
  for (const radio of form.querySelectorAll('input[name="strategy"]')) {
    radio.addEventListener("change", updateDecoding);
  }
  modelSelect.addEventListener("change", () => {
    versionSelect.value = "";
    refreshModel();
  });
  modelName.addEventListener("change", refreshModel);
  versionSelect.addEventListener("change", refreshModel);
  results.addEventListener("mouseover", pointAt);

  async function start() {
    const wanted = new URLSearchParams(window.location.search);
    await loadListing();
    const model = wanted.get("model");
    if (model && state.listing === null) modelName.value = model;
    if (model && state.listing && state.listing.some((entry) => entry.name === model)) {
      modelSelect.value = model;
    }
    state.wantedVersion = wanted.get("version") || "";
    await refreshModel();
    document.body.dataset.ready = "true";
  }
  start();
})();
