// The ctxgraph explorer: a client of the server's HTTP API and nothing else. The API key is
// kept in sessionStorage (for this tab only) and sent as `Authorization: Bearer`; every view
// has a hash URL (#/ask?q=..., #/node/ID, #/session/ID, #/topic/T, #/entity/ID, #/health)
// that reopens it.
import { views } from './views.js';

const KEY = 'ctxgraph.key';

/** An element: h('a', {href: '#/x', class: 'c'}, 'text', child, ...). Text is never parsed as HTML. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** An error from the API, with its stable code. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Call the API: GET `path`, or POST `body` as JSON. */
export async function api(path, body) {
  const headers = { Accept: 'application/json' };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = 'Bearer ' + key;
  const init = { method: body === undefined ? 'GET' : 'POST', headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!resp.ok) {
    const e = (data && data.error) || {};
    throw new ApiError(resp.status, e.code || String(resp.status), e.message || text || resp.statusText);
  }
  return data;
}

/** A query string of the non-empty values of `params`. */
export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
}

/** The hash link of a node: its node view. */
export function nodeHref(label, id) {
  return '#/node/' + encodeURIComponent(id) + qs({ label });
}

/** A link to a node, shown as `Label:id`. */
export function nodeLink(label, id, text) {
  return h('a', { href: nodeHref(label, id), class: 'nodelink', 'data-node': label + ':' + id }, text || label + ':' + id);
}

/** One line saying what a node is, from its properties. */
export function describe(node) {
  const p = node.properties || {};
  switch (node.label) {
    case 'Event': {
      // Enrichment's summary says it all; before enrichment, the type, tool, status and text.
      if (p.summary) return p.summary;
      const head = [p.event_type, p.tool_name].filter(Boolean).join(' ');
      const text = (p.payload && (p.payload.error || p.payload.message || p.payload.text || p.payload.content)) || '';
      return (head + (p.status ? ' ' + p.status : '') + (text ? ': ' + text : '')).trim();
    }
    case 'Entity': return (p.entity_type ? p.entity_type + ' ' : '') + (p.name || node.id);
    case 'Memory': return (p.kind || p.memory_type || 'memory') + ': ' + (p.content || '');
    case 'Summary': return p.text || p.summary || '';
    case 'Fact': return [p.subject, p.predicate, p.object].filter(Boolean).join(' ');
    case 'Sentence': return p.text || '';
    default: return p.name || p.text || p.content || p.summary || '';
  }
}

/** A short time: the RFC 3339 string as written, without sub-second noise. */
export function when(t) {
  return t ? String(t).replace('T', ' ').replace(/\.\d+/, '') : '';
}

/** The error box of a failed call; an unauthenticated one asks for a key. */
export function errorBox(e) {
  const hint = e.status === 401 ? ' Enter an API key above (ctxgraph principal add prints one; ctxgraph ui puts one in its URL).' : '';
  return h('p', { class: 'error', 'data-code': e.code || '' }, (e.code ? e.code + ': ' : '') + e.message + hint);
}

/** The current route: view name, its argument and its parameters. */
export function route() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?', 2);
  const [view, ...rest] = path.split('/');
  return { view: view || 'ask', arg: rest.length ? decodeURIComponent(rest.join('/')) : '', params: new URLSearchParams(query || '') };
}

/** Go to a hash URL (a new history entry; the view renders on hashchange). */
export function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

let generation = 0;

/** Whether a render started at `g` is still the latest (a slow answer must not overwrite a newer view). */
export function current(g) {
  return g === generation;
}

async function render() {
  const g = ++generation;
  const r = route();
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === r.view);
  const main = document.getElementById('main');
  const view = views[r.view];
  main.replaceChildren();
  if (!view) {
    main.append(h('p', { class: 'error' }, 'No view ' + r.view + '.'));
    return;
  }
  try {
    await view(main, r, g);
  } catch (e) {
    if (current(g)) main.append(errorBox(e));
  }
}

async function showWho() {
  const who = document.getElementById('who');
  if (!sessionStorage.getItem(KEY)) { who.textContent = 'no key'; return; }
  try {
    const me = await api('/v1/whoami');
    who.textContent = me.owner ? 'store owner' : me.name + ' (tenant ' + me.tenant + ')';
  } catch (e) {
    who.textContent = e.status === 401 ? 'key not accepted' : '';
  }
}

function start() {
  // `ctxgraph ui` hands over its key in the fragment (#key=...), which is never sent to the
  // server: keep it for this tab and take it out of the address bar and history.
  const m = location.hash.match(/^#key=([A-Za-z0-9_]+)/);
  if (m) {
    sessionStorage.setItem(KEY, m[1]);
    history.replaceState(null, '', location.pathname + '#/ask');
  }
  document.getElementById('keyform').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = document.getElementById('key');
    if (input.value.trim()) sessionStorage.setItem(KEY, input.value.trim());
    input.value = '';
    showWho();
    render();
  });
  document.getElementById('forget').addEventListener('click', () => {
    sessionStorage.removeItem(KEY);
    showWho();
    render();
  });
  window.addEventListener('hashchange', render);
  showWho();
  render();
}

start();
