// The console's only way to the broker: the public /v3 API, as any client uses it.
// With security on, the user's name and password go as HTTP Basic on every call; they are
// kept in sessionStorage (gone when the tab closes). `credentials: "omit"` keeps the browser
// from answering a 401 with its own password dialog: the console shows its sign-in form.
const AUTH_KEY = "highwater.console.auth";
const USER_KEY = "highwater.console.user";

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.error_code;
    this.kind = body?.error;
  }

  describe() {
    if (this.status === 403) return `Not allowed: ${this.message} (403). Ask for the matching ACL.`;
    return this.kind ? `${this.kind}: ${this.message} (${this.status})` : `${this.message}`;
  }
}

export function user() {
  return sessionStorage.getItem(USER_KEY);
}

export function signIn(name, password) {
  const bytes = new TextEncoder().encode(`${name}:${password}`);
  sessionStorage.setItem(AUTH_KEY, btoa(String.fromCharCode(...bytes)));
  sessionStorage.setItem(USER_KEY, name);
  clusterId = null;
}

export function signOut() {
  sessionStorage.removeItem(AUTH_KEY);
  sessionStorage.removeItem(USER_KEY);
  clusterId = null;
}

export async function api(path, { method = "GET", body, query } = {}) {
  const headers = { Accept: "application/json" };
  const auth = sessionStorage.getItem(AUTH_KEY);
  if (auth) headers.Authorization = `Basic ${auth}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const search = query ? `?${new URLSearchParams(query)}` : "";
  const response = await fetch(path + search, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
  });
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { message: text };
    }
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    // A 401 refuses the credentials this call carried. If the user has signed in again
    // since, it is about credentials no longer in use and must not ask for new ones.
    if (response.status === 401 && sessionStorage.getItem(AUTH_KEY) === auth) {
      window.dispatchEvent(new CustomEvent("highwater:unauthorized"));
    }
    throw error;
  }
  return data;
}

let clusterId = null;

export async function cluster() {
  if (clusterId === null) clusterId = (await api("/v3/clusters")).data[0].cluster_id;
  return clusterId;
}

/** A call under /v3/clusters/{cluster_id}. */
export async function capi(path, options) {
  return api(`/v3/clusters/${encodeURIComponent(await cluster())}${path}`, options);
}
