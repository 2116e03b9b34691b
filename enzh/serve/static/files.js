// File translation for enzh's web page: choose or drop a file, upload it to translate_file with progress,
// then link to the translatedFileUrl. An ES module (static/app.js calls setUpFiles; no build step).

import { ApiError, describe, networkError, plural, retryAfterSeconds, serverMessage } from "./api.js";

const $ = (id) => document.getElementById(id);
const setText = (id, text) => ($(id).textContent = text);

let page = null; // what setUpFiles was given: formats(), source(), target(), apiKey(), keyField(), showKeyField()
let current = null; // the XMLHttpRequest of the upload in flight

function extension(name) {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot).toLowerCase() : "";
}

function downloadName(url, fallback) {
  try {
    const path = new URL(url, document.baseURI).pathname;
    const last = decodeURIComponent(path.slice(path.lastIndexOf("/") + 1));
    if (extension(last)) return last;
  } catch {
    // not a URL we can read a name from
  }
  const ext = extension(fallback);
  return ext ? `${fallback.slice(0, -ext.length)}.${page.target()}${ext}` : fallback;
}

function fileState(message, busy) {
  setText("file-state", message);
  $("file-spinner").hidden = !busy;
  $("file-cancel").hidden = !busy;
}

function fileFailed(error) {
  if (error.status === 403) page.showKeyField();
  $("file-progress").hidden = true;
  fileState("", false);
  setText("file-error", describe(error, page.keyField()));
}

function translateFile(file) {
  if (current) current.abort();
  setText("file-error", "");
  $("download").hidden = true;
  const ext = extension(file.name);
  const formats = page.formats();
  if (!formats.includes(ext)) {
    setText(
      "file-error",
      `${file.name}: ${ext ? `${ext} files` : "files without an extension"} cannot be translated. ` +
        `Choose one of: ${formats.join(" ")}.`,
    );
    return;
  }
  const form = new FormData();
  form.append("file", file, file.name);
  form.append("source", page.source());
  form.append("target", page.target());
  if (page.apiKey()) form.append("api_key", page.apiKey());

  const xhr = new XMLHttpRequest(); // not fetch(): XHR reports upload progress
  current = xhr;
  const progress = $("file-progress");
  $("file-job").hidden = false;
  setText("file-name", `${file.name} (${plural(file.size, "byte")})`);
  progress.hidden = false;
  progress.value = 0;
  fileState("Uploading…", true);

  xhr.upload.addEventListener("progress", (event) => {
    if (event.lengthComputable) progress.value = (100 * event.loaded) / event.total;
  });
  xhr.upload.addEventListener("load", () => {
    progress.removeAttribute("value"); // indeterminate while the server translates
    fileState("Translating…", true);
  });
  xhr.addEventListener("load", () => {
    if (current !== xhr) return;
    current = null;
    let body = null;
    try {
      body = JSON.parse(xhr.responseText);
    } catch {
      body = null;
    }
    if (xhr.status < 200 || xhr.status >= 300) {
      const retry = retryAfterSeconds(xhr.getResponseHeader("Retry-After"));
      fileFailed(new ApiError(serverMessage(body, xhr.status), xhr.status, retry));
      return;
    }
    if (!body || typeof body.translatedFileUrl !== "string") {
      fileFailed(new ApiError("the server's answer has no translatedFileUrl", xhr.status));
      return;
    }
    const link = $("download");
    const name = downloadName(body.translatedFileUrl, file.name);
    link.href = body.translatedFileUrl;
    link.download = name;
    link.textContent = `Download ${name}`;
    link.hidden = false;
    progress.value = 100;
    fileState("Done.", false);
    link.focus();
  });
  xhr.addEventListener("error", () => {
    if (current !== xhr) return;
    current = null;
    fileFailed(networkError(null));
  });
  xhr.addEventListener("abort", () => {
    if (current === xhr) current = null;
    progress.hidden = true;
    fileState("Cancelled.", false);
  });
  xhr.open("POST", "translate_file");
  xhr.setRequestHeader("Accept", "application/json");
  xhr.send(form);
}

export function setUpFiles(callbacks) {
  page = callbacks;
  const drop = $("drop");
  const over = (on) => (event) => {
    event.preventDefault();
    drop.classList.toggle("over", on);
  };
  drop.addEventListener("dragenter", over(true));
  drop.addEventListener("dragover", over(true));
  drop.addEventListener("dragleave", over(false));
  drop.addEventListener("drop", (event) => {
    over(false)(event);
    const files = event.dataTransfer && event.dataTransfer.files;
    if (files && files.length) translateFile(files[0]);
  });
  // A file dropped next to the zone must not make the browser leave the page to open it.
  window.addEventListener("dragover", (event) => event.preventDefault());
  window.addEventListener("drop", (event) => event.preventDefault());
  $("file").addEventListener("change", (event) => {
    const input = event.target;
    if (input.files && input.files.length) translateFile(input.files[0]);
    input.value = ""; // the same file can be chosen again
  });
  $("file-cancel").addEventListener("click", () => current && current.abort());
}
