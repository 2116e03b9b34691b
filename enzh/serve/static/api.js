// The server's API as the page uses it: requests, and errors turned into what the user reads.
// An ES module of enzh's web page (static/app.js imports it; no build step).

export const plural = (n, word) => `${n.toLocaleString("en")} ${word}${n === 1 ? "" : "s"}`;

// ---- errors --------------------------------------------------------------------------------------------

export class ApiError extends Error {
  constructor(message, status = 0, retryAfter = 0) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

export function serverMessage(body, status) {
  const error = body && body.error;
  if (typeof error === "string" && error) return error; // LibreTranslate: {"error": "..."}
  if (error && typeof error.message === "string") return error.message; // /v1: {"error": {"code", "message"}}
  if (body && typeof body.detail === "string") return body.detail;
  return `the server answered HTTP ${status}`;
}

export function retryAfterSeconds(value) {
  if (!value) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.ceil(seconds));
  const date = Date.parse(value); // Retry-After may also be an HTTP date
  return Number.isNaN(date) ? 0 : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

export function networkError(error) {
  const detail = error && error.message ? ` (${error.message})` : "";
  return new ApiError(`Cannot reach the server${detail}. Check your connection and that enzh serve is running.`);
}

const sentence = (text) => (/[.!?。]$/.test(text) ? text : `${text}.`);

// What the user reads for an error: the server's own text, and what to do about it.
export function describe(error, keyField = false) {
  const message = sentence(error.message);
  const wait = error.retryAfter ? ` Try again in ${plural(error.retryAfter, "second")}.` : " Try again later.";
  switch (error.status) {
    case 403:
      return `Access refused: ${message}${keyField ? " Check the API key." : ""}`;
    case 429:
      return `${/too many/i.test(message) ? "" : "Too many requests: "}${message}${wait}`;
    case 503:
      return `The server is not ready: ${message}${wait}`;
    case 0:
      return message;
    default:
      return `Error ${error.status}: ${message}`;
  }
}

// ---- the API -------------------------------------------------------------------------------------------

export async function readJson(response) {
  const text = await response.text(); // an AbortError here propagates like one from fetch()
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export async function postJson(path, payload, signal) {
  let response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(payload),
      signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw networkError(error);
  }
  const body = await readJson(response);
  if (!response.ok) {
    const retry = retryAfterSeconds(response.headers.get("Retry-After"));
    throw new ApiError(serverMessage(body, response.status), response.status, retry);
  }
  if (body === null || typeof body !== "object") {
    throw new ApiError(`the server answered HTTP ${response.status} without JSON`, response.status);
  }
  return body;
}

export function translatedString(body) {
  const text = body.translatedText;
  if (typeof text === "string") return text;
  if (Array.isArray(text)) return text.join("\n");
  throw new ApiError("the server's answer has no translatedText", 200);
}
