// The /api/v1 client: a bearer token kept in localStorage, JSON in and out, and every error
// as the API's problem detail (RFC 9457), whose field names what was wrong.

const TOKEN_KEY = "tickgate-token";

export function token() { return localStorage.getItem(TOKEN_KEY) || ""; }
export function setToken(t) { t ? localStorage.setItem(TOKEN_KEY, t) : localStorage.removeItem(TOKEN_KEY); }

// ApiError carries the problem the API answered: status, title, detail and field.
export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || ("HTTP " + status));
    this.status = status;
    this.problem = problem || {};
    this.field = this.problem.field || "";
  }
}

// api calls /api/v1 + path; headers may add If-Match and the like.
export async function api(method, path, body, headers) {
  const opts = { method, headers: Object.assign({ Authorization: "Bearer " + token() }, headers || {}) };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch("/api/v1" + path, opts);
  } catch (e) {
    throw new ApiError(0, { title: "Network error", detail: "the API did not answer: " + e.message });
  }
  const text = await resp.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch (e) { data = { detail: text }; }
  }
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

// problemText is the one-line form of an error: "field: detail" when a field is named.
export function problemText(e) {
  if (!e) return "";
  if (e instanceof ApiError) return (e.field ? e.field + ": " : "") + e.message;
  return String(e.message || e);
}
