// enzh's web page. Talks to the server's LibreTranslate-compatible API only: GET frontend/settings,
// GET languages (the directions the server's models offer: the From and To selects), POST translate (JSON)
// and POST translate_file (multipart, in files.js). Paths are relative, so the page
// also works behind a reverse proxy that serves it under a prefix. Native ES modules: no build step.

import { ApiError, describe, plural, postJson, readJson, translatedString } from "./api.js";
import { setUpFiles } from "./files.js";

const $ = (id) => document.getElementById(id);

const DEBOUNCE_MS = 400;
const ALTERNATIVES = 3;
const MAX_AUTO_RETRY_S = 30;
const DEFAULT_FORMATS = [
  ".txt", ".html", ".md", ".srt", ".vtt", ".docx", ".pptx", ".xlsx", ".odt", ".odp", ".epub", ".jsonl", ".tsv",
  ".csv", ".po", ".pot", ".xlf", ".xliff",
];
const DEFAULT_DEMO_NOTICE =
  "This server runs enzh's small demo model. It only knows the simple sentences of its training domain " +
  "(people, places, times, dates, numbers and prices) and is not a general translator.";
const EXAMPLE = "The weather is nice today. I would like a cup of coffee.\n\nWhere is the train station?";
const KEY_STORAGE = "enzh.apiKey";
const TARGET_STORAGE = "enzh.target"; // the Chinese script
const SOURCE_STORAGE = "enzh.source"; // the From language (auto, en, zh)
const LANGUAGE_STORAGE = "enzh.targetLanguage"; // the To language (zh, en)
const LANGUAGE_NAMES = { en: "English", zh: "Chinese" };

const state = {
  directions: [["en", "zh"]], // [source, target] language pairs, from GET languages
  detected: "", // the language the server detected in the text (From: Detect language), or ""
  charLimit: 0, // 0: no limit known (the server still enforces its own)
  alternatives: ALTERNATIVES, // how many to ask for: at most the server's maxAlternatives
  keyRequired: false,
  formats: DEFAULT_FORMATS,
  timer: 0, // the debounce timer of translate-as-you-type
  retryTimer: 0, // a retry after 503 + Retry-After (the model is still loading)
  controller: null, // AbortController of the translation in flight; a newer request aborts it
  altController: null,
  shown: null, // {source, target, best, alternatives}: what the result pane holds
};

// ---- small helpers -------------------------------------------------------------------------------------

function storageGet(name) {
  try {
    return window.localStorage.getItem(name) || "";
  } catch {
    return ""; // storage disabled: nothing is remembered
  }
}

function storageSet(name, value) {
  try {
    if (value) window.localStorage.setItem(name, value);
    else window.localStorage.removeItem(name);
  } catch {
    // storage disabled or full: the value lives only as long as the page
  }
}

const codePoints = (text) => Array.from(text).length; // what the server counts, not UTF-16 units
const script = () => document.querySelector('input[name="target"]:checked').value;
const sourceLanguage = () => $("source-language").value; // auto, en or zh
const targetLanguage = () => $("target-language").value; // zh or en
const target = () => (targetLanguage() === "zh" ? script() : targetLanguage()); // the code sent as target
const nameOf = (language) => LANGUAGE_NAMES[language] || language;
const unique = (items) => [...new Set(items)];

// zh, zh-Hans, zt, zh-Hant, zh-TW... are Chinese; en-US is English.
function baseOf(code) {
  const lower = String(code || "").toLowerCase();
  return lower === "zt" || lower.startsWith("zh") ? "zh" : lower.split(/[-_]/)[0];
}
const apiKey = () => $("api-key").value.trim();

function traditional(code) {
  return /^(zt|zh[-_](hant|tw|hk|mo)([-_].*)?)$/i.test(String(code || ""));
}

function setText(id, text) {
  $(id).textContent = text;
}

function showKeyField(focus) {
  $("key-row").hidden = false;
  if (focus) $("api-key").focus();
}

function translatePayload(text, targetCode, extra) {
  const payload = { q: text, source: sourceLanguage(), target: targetCode, format: "text", ...extra };
  const key = apiKey();
  if (key) payload.api_key = key;
  return payload;
}

// ---- text translation ----------------------------------------------------------------------------------

function setBusy(busy) {
  $("spinner").hidden = !busy;
  $("result").setAttribute("aria-busy", String(busy));
}

function setError(message) {
  setText("error", message);
}

function setStatus(message) {
  setText("status", message);
}

function limitMessage(length) {
  return (
    `The text is ${plural(length, "character")} long; this server translates at most ` +
    `${plural(state.charLimit, "character")} at a time. Shorten it to translate.`
  );
}

function updateCount() {
  const length = codePoints($("source").value);
  const over = state.charLimit > 0 && length > state.charLimit;
  const count = $("count");
  count.textContent = state.charLimit > 0
    ? `${length.toLocaleString("en")} / ${plural(state.charLimit, "character")}`
    : plural(length, "character");
  count.classList.toggle("over", over);
  return over;
}

function showResult(shown) {
  state.shown = shown;
  const result = $("result");
  result.textContent = shown ? shown.current : "";
  result.lang = shown ? shown.target : target();
  $("copy").disabled = !(shown && shown.current);
  $("alternatives-button").disabled = !(shown && shown.current) || state.alternatives < 1;
  showConfidence(shown && shown.current === shown.best ? shown.confidence : null);
  hideAlternatives();
}

// The server's confidence in the best translation (its translationConfidence extension): a mark with the
// score and flags as a tooltip when it is low; nothing when it is not, or for an alternative chosen instead.
const FLAG_NAMES = {
  low_score: "the model was unsure of its words",
  repetition: "the output repeats itself",
  length_ratio: "its length is unusual for the text's",
  copy: "the output copies the input",
  unknown_token: "the model wrote an unknown token",
};

function showConfidence(confidence) {
  const mark = $("confidence");
  const low = Boolean(confidence && confidence.low_confidence);
  mark.hidden = !low;
  if (!low) {
    mark.removeAttribute("title");
    return;
  }
  const flags = Array.isArray(confidence.flags) ? confidence.flags : [];
  const reasons = flags.map((flag) => FLAG_NAMES[flag] || flag).join("; ");
  const score = Number(confidence.score);
  mark.title =
    `This translation may be wrong: ${reasons || "low score"}. ` +
    `Score ${Number.isFinite(score) ? score.toFixed(2) : "?"} (mean token log-probability; 0 is certain).`;
  mark.setAttribute("aria-label", `Low confidence. ${mark.title}`);
}

function abortText() {
  clearTimeout(state.timer);
  clearTimeout(state.retryTimer);
  for (const name of ["controller", "altController"]) {
    if (state[name]) state[name].abort();
    state[name] = null;
  }
  setBusy(false);
}

function scheduleTranslate() {
  clearTimeout(state.timer);
  state.timer = setTimeout(translateNow, DEBOUNCE_MS);
}

async function translateNow() {
  abortText();
  const text = $("source").value;
  const targetCode = target();
  setError("");
  if (updateCount()) {
    showResult(null);
    setText("timing", "");
    setError(limitMessage(codePoints(text)));
    return;
  }
  if (!text.trim()) {
    showResult(null);
    setText("timing", "");
    return;
  }
  const controller = new AbortController();
  state.controller = controller;
  setBusy(true);
  const started = performance.now();
  try {
    const payload = translatePayload(text, targetCode, { scores: true });
    const body = await postJson("translate", payload, controller.signal);
    if (state.controller !== controller) return;
    const best = translatedString(body);
    showDetected(body.detectedLanguage);
    const confidence = body.translationConfidence || null;
    showResult({ source: text, target: targetCode, best, current: best, alternatives: null, confidence });
    setText("timing", `${Math.round(performance.now() - started)} ms`);
  } catch (error) {
    if (error.name === "AbortError" || state.controller !== controller) return;
    failed(error, () => translateNow());
  } finally {
    if (state.controller === controller) {
      state.controller = null;
      setBusy(false);
    }
  }
}

function failed(error, retry) {
  if (!(error instanceof ApiError)) error = new ApiError(String(error.message || error), 0);
  if (error.status === 403) showKeyField(false);
  setError(describe(error, !$("key-row").hidden));
  if (error.status === 503 && error.retryAfter > 0 && error.retryAfter <= MAX_AUTO_RETRY_S && retry) {
    state.retryTimer = setTimeout(retry, error.retryAfter * 1000); // the model is loading: try again by itself
  }
}

// ---- alternatives --------------------------------------------------------------------------------------

function hideAlternatives() {
  $("alternatives-box").hidden = true;
  $("alternatives-button").setAttribute("aria-expanded", "false");
  $("alternatives").replaceChildren();
}

function renderAlternatives(shown) {
  const list = $("alternatives");
  list.replaceChildren();
  for (const text of shown.alternatives) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "alternative";
    button.lang = shown.target;
    button.textContent = text;
    button.setAttribute("aria-pressed", String(text === shown.current));
    button.addEventListener("click", () => useAlternative(text));
    item.append(button);
    list.append(item);
  }
  $("alternatives-box").hidden = false;
  $("alternatives-button").setAttribute("aria-expanded", "true");
}

function useAlternative(text) {
  const shown = state.shown;
  if (!shown) return;
  shown.current = text;
  $("result").textContent = text;
  showConfidence(text === shown.best ? shown.confidence : null); // scored: the best translation only
  for (const button of $("alternatives").querySelectorAll("button")) {
    button.setAttribute("aria-pressed", String(button.textContent === text));
  }
  setStatus("Using the chosen translation.");
}

async function toggleAlternatives() {
  const shown = state.shown;
  if (!shown) return;
  if (!$("alternatives-box").hidden) {
    hideAlternatives();
    return;
  }
  if (shown.alternatives) {
    renderAlternatives(shown);
    return;
  }
  if (state.altController) state.altController.abort();
  const controller = new AbortController();
  state.altController = controller;
  setBusy(true);
  setError("");
  try {
    const payload = translatePayload(shown.source, shown.target, { alternatives: state.alternatives });
    const body = await postJson("translate", payload, controller.signal);
    if (state.altController !== controller || state.shown !== shown) return;
    const others = Array.isArray(body.alternatives) ? body.alternatives.filter((t) => typeof t === "string") : [];
    shown.alternatives = [...new Set([shown.best, translatedString(body), ...others])];
    renderAlternatives(shown);
    const count = shown.alternatives.length - 1;
    setStatus(count ? `${plural(count, "other translation")} found.` : "No other translation was found.");
  } catch (error) {
    if (error.name === "AbortError" || state.altController !== controller) return;
    failed(error, null);
  } finally {
    if (state.altController === controller) {
      state.altController = null;
      setBusy(false);
    }
  }
}

// ---- copy ----------------------------------------------------------------------------------------------

function copyWithSelection(text) {
  const area = document.createElement("textarea");
  area.value = text;
  area.readOnly = true;
  area.className = "visually-hidden";
  document.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch {
    copied = false;
  }
  area.remove();
  $("copy").focus();
  return copied;
}

async function copyResult() {
  const text = $("result").textContent;
  if (!text) return;
  let copied = false;
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch {
      copied = false; // permission refused: fall back to a selection
    }
  }
  if (!copied) copied = copyWithSelection(text);
  setStatus(copied ? "Copied to the clipboard." : "Could not copy: select the translation and press Ctrl+C.");
  if (copied) {
    const button = $("copy");
    button.textContent = "Copied";
    setTimeout(() => (button.textContent = "Copy"), 1500);
  }
}

// ---- languages: From, To and the swap ------------------------------------------------------------------

const sources = () => unique(state.directions.map(([from]) => from));
const targetsOf = (from) =>
  unique(state.directions.filter(([a]) => from === "auto" || a === from).map(([, to]) => to));

function directionsFrom(list) {
  const found = [];
  for (const entry of Array.isArray(list) ? list : []) {
    for (const code of Array.isArray(entry.targets) ? entry.targets : []) {
      const from = baseOf(entry.code);
      const to = baseOf(code);
      if (from !== to && !found.some(([a, b]) => a === from && b === to)) found.push([from, to]);
    }
  }
  return found;
}

function fillSelect(select, values, extra) {
  const keep = select.value;
  select.replaceChildren();
  for (const [value, name] of [...extra, ...values.map((v) => [v, nameOf(v)])]) {
    const option = document.createElement("option");
    option.value = value;
    option.textContent = name;
    select.append(option);
  }
  if (keep && [...select.options].some((o) => o.value === keep)) select.value = keep;
}

function choose(select, value) {
  if (value && [...select.options].some((o) => o.value === value && !o.disabled)) select.value = value;
}

function fillLanguages(directions) {
  if (!directions.length) return;
  state.directions = directions;
  fillSelect($("source-language"), sources(), [["auto", "Detect language"]]);
  fillSelect($("target-language"), unique(directions.map(([, to]) => to)), []);
  choose($("source-language"), storageGet(SOURCE_STORAGE));
  choose($("target-language"), storageGet(LANGUAGE_STORAGE));
  syncDirection();
}

// The language the swap puts in To: From's, or with Detect language the one detected in the text.
function swappedTarget() {
  const from = sourceLanguage();
  if (from !== "auto") return from;
  if (state.detected) return state.detected;
  const others = sources().filter((language) => language !== targetLanguage());
  return others.length === 1 ? others[0] : "";
}

function canSwap() {
  const to = swappedTarget();
  return Boolean(to) && state.directions.some(([a, b]) => a === targetLanguage() && b === to);
}

function heading() {
  const pairs = state.directions;
  const both = pairs.length === 2 && pairs[0][0] === pairs[1][1] && pairs[0][1] === pairs[1][0];
  if (both) return `${nameOf(pairs[0][0])} ↔ ${nameOf(pairs[0][1])}`;
  return pairs.map(([a, b]) => `${nameOf(a)} → ${nameOf(b)}`).join(", ");
}

// To offers what From translates into (a To it cannot reach is disabled, another chosen); the script choice is
// Chinese's only; the pane titles, placeholder and heading follow.
function syncDirection() {
  const from = sourceLanguage();
  const reachable = targetsOf(from);
  const select = $("target-language");
  for (const option of select.options) option.disabled = !reachable.includes(option.value);
  if (!reachable.includes(select.value) && reachable.length) select.value = reachable[0];
  const to = targetLanguage();
  $("scripts").hidden = to !== "zh";
  $("swap").disabled = !canSwap();
  setText("source-title", from === "auto" ? "Text" : nameOf(from));
  setText("result-title", nameOf(to));
  $("source").placeholder = from === "auto" ? "Type or paste text" : `Type or paste ${nameOf(from)} text`;
  $("source").lang = from === "auto" ? "" : from;
  setText("heading", heading());
}

function showDetected(detected) {
  const guess = Array.isArray(detected) ? detected[0] : detected;
  state.detected = sourceLanguage() === "auto" && guess && guess.language ? baseOf(guess.language) : "";
  setText("detected", state.detected ? `Detected: ${nameOf(state.detected)}` : "");
  $("swap").disabled = !canSwap();
}

function directionChanged() {
  state.detected = "";
  setText("detected", "");
  syncDirection();
  storageSet(SOURCE_STORAGE, sourceLanguage());
  storageSet(LANGUAGE_STORAGE, targetLanguage());
  if ($("source").value.trim()) translateNow();
  else showResult(null);
}

function swapLanguages() {
  if (!canSwap()) return;
  const to = swappedTarget();
  const translation = state.shown && state.shown.current;
  $("source-language").value = targetLanguage();
  syncDirection();
  $("target-language").value = to;
  if (translation) $("source").value = translation; // the translation becomes the text, as LibreTranslate does
  updateCount();
  directionChanged();
}

async function loadLanguages() {
  try {
    const response = await fetch("languages", { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    fillLanguages(directionsFrom(await readJson(response)));
  } catch {
    // a network error: English -> Chinese stays, and the first translation will say what is wrong
  }
}

// ---- settings ------------------------------------------------------------------------------------------

function applySettings(settings) {
  if (Number.isInteger(settings.charLimit) && settings.charLimit > 0) state.charLimit = settings.charLimit;
  state.keyRequired = settings.keyRequired === true;
  if (state.keyRequired) showKeyField(false);
  const source = settings.language && settings.language.source && settings.language.source.code;
  if (typeof source === "string" && source && !storageGet(SOURCE_STORAGE)) {
    choose($("source-language"), source === "auto" ? "auto" : baseOf(source));
  }
  const formats = settings.supportedFilesFormat;
  if (Array.isArray(formats) && formats.length) {
    state.formats = formats.map((f) => String(f).toLowerCase()).map((f) => (f.startsWith(".") ? f : `.${f}`));
    $("file").accept = state.formats.join(",");
    setText("file-formats", state.formats.join(" "));
  }
  if (settings.filesTranslation === false) $("files").hidden = true;
  const defaultTarget = settings.language && settings.language.target && settings.language.target.code;
  if (!storageGet(TARGET_STORAGE) && defaultTarget && baseOf(defaultTarget) === "zh") {
    $(traditional(defaultTarget) ? "target-hant" : "target-hans").checked = true;
  }
  if (!storageGet(LANGUAGE_STORAGE) && defaultTarget) choose($("target-language"), baseOf(defaultTarget));
  const enzh = settings.enzh || {};
  if (Number.isInteger(enzh.maxAlternatives)) {
    state.alternatives = Math.max(0, Math.min(ALTERNATIVES, enzh.maxAlternatives));
    $("alternatives-button").hidden = state.alternatives < 1;
  }
  if (Array.isArray(enzh.targets)) limitTargets(enzh.targets);
  if (typeof enzh.model === "string" && enzh.model) {
    setText("model", `Model: ${enzh.model}`);
    $("model").hidden = false;
  }
  if (enzh.demo === true) {
    setText("demo-text", typeof enzh.demoNotice === "string" && enzh.demoNotice ? enzh.demoNotice : DEFAULT_DEMO_NOTICE);
    $("demo-notice").hidden = false;
  }
  updateCount();
}

// Only the scripts this model can write can be chosen (a model may have no Traditional).
function limitTargets(targets) {
  const radios = Array.from(document.querySelectorAll('input[name="target"]'));
  for (const radio of radios) {
    radio.disabled = !targets.includes(radio.value);
    radio.closest("label").title = radio.disabled ? "This model cannot write this script" : "";
  }
  const usable = radios.filter((radio) => !radio.disabled);
  if (usable.length && !usable.some((radio) => radio.checked)) usable[0].checked = true;
}

async function loadSettings() {
  try {
    const response = await fetch("frontend/settings", { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const settings = await readJson(response);
    if (settings && typeof settings === "object") applySettings(settings);
  } catch {
    // an older server or a network error: the defaults stay, and the first translation will say what is wrong
  }
}

// ---- wiring --------------------------------------------------------------------------------------------

function start() {
  $("file").accept = state.formats.join(",");
  $("api-key").value = storageGet(KEY_STORAGE);
  const saved = storageGet(TARGET_STORAGE);
  if (saved) $(traditional(saved) ? "target-hant" : "target-hans").checked = true;

  $("source").addEventListener("input", () => {
    setStatus("");
    if (updateCount()) translateNow(); // over the limit: say so at once, send nothing
    else scheduleTranslate();
  });
  $("source").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      translateNow();
    }
  });
  $("translate").addEventListener("click", translateNow);
  $("source-language").addEventListener("change", directionChanged);
  $("target-language").addEventListener("change", directionChanged);
  $("swap").addEventListener("click", swapLanguages);
  for (const radio of document.querySelectorAll('input[name="target"]')) {
    radio.addEventListener("change", () => {
      storageSet(TARGET_STORAGE, target());
      if ($("source").value.trim()) translateNow();
    });
  }
  $("clear").addEventListener("click", () => {
    abortText();
    $("source").value = "";
    updateCount();
    showResult(null);
    setError("");
    setStatus("");
    setText("timing", "");
    $("source").focus();
  });
  $("copy").addEventListener("click", copyResult);
  $("alternatives-button").addEventListener("click", toggleAlternatives);
  $("key-row").addEventListener("submit", (event) => event.preventDefault());
  $("api-key").addEventListener("input", () => storageSet(KEY_STORAGE, apiKey()));
  $("example").addEventListener("click", () => {
    $("source").value = EXAMPLE;
    translateNow();
  });
  setUpFiles({
    formats: () => state.formats,
    source: sourceLanguage,
    target,
    apiKey,
    keyField: () => !$("key-row").hidden,
    showKeyField: () => showKeyField(false),
  });
  updateCount();
  syncDirection();
  loadSettings()
    .then(loadLanguages)
    .then(() => {
      if ($("source").value.trim()) translateNow(); // text the browser kept from before a reload
    });
}

start(); // a module runs once the document is parsed
