// The explorer's views. Each is `async (main, route, generation)`: it renders into `main`,
// reads only through the HTTP API, and loads large lists a page at a time.
import { h, api, qs, go, nodeLink, nodeHref, describe, when, errorBox, current } from './app.js';
import { draw, extend, nodeElement, edgeElement, available } from './graph.js';

const enc = encodeURIComponent;
const fixed = (x, n = 2) => (typeof x === 'number' ? x.toFixed(n) : '');

/** A labelled input of a query form. */
function field(label, name, value, attrs = {}) {
  return h('label', {}, label, h('input', { name, value: value || '', ...attrs }));
}

/** The values of a form's named inputs. */
function formValues(form) {
  const out = {};
  for (const el of form.querySelectorAll('input[name], select[name]')) out[el.name] = el.value.trim();
  return out;
}

/** A list of `Label:id` keys as links. */
function keyLinks(keys) {
  return keys.map((k, i) => [i ? ', ' : '', nodeLink(k.label, k.id)]);
}

// ------------------------------------------------------------------------------------------
// Ask: a question, its context pack, each item's path as a small graph.

async function ask(main, r, g) {
  const p = r.params;
  const form = h('form', { class: 'query', id: 'askform' },
    field('Question', 'q', p.get('q'), { class: 'wide', placeholder: 'Why did session sess-0003 fail?', required: true }),
    field('k', 'k', p.get('k') || '10', { class: 'narrow', type: 'number', min: 1, max: 100 }),
    field('Session', 'session', p.get('session'), { size: 12 }),
    field('Agent', 'agent', p.get('agent'), { size: 12 }),
    field('Since', 'since', p.get('since'), { size: 20, placeholder: '2026-11-16T00:00:00Z' }),
    field('Until', 'until', p.get('until'), { size: 20 }),
    h('label', {}, 'Intent', h('select', { name: 'intent' },
      ['', 'why', 'when', 'who_what', 'related', 'overview', 'lookup'].map((i) =>
        h('option', { value: i, selected: p.get('intent') === i }, i || 'classify')))),
    h('button', { type: 'submit' }, 'Ask'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    go('#/ask' + qs(formValues(form)));
  });
  main.append(h('h1', {}, 'Ask'), form);
  const q = p.get('q');
  if (!q) {
    main.append(h('p', { class: 'muted' }, 'Ask a question: the context pack comes back ranked, each item with the factors of its score and the path that brought it in.'));
    return;
  }
  const body = { question: q, k: Number(p.get('k') || 10) };
  for (const f of ['session', 'agent', 'since', 'until', 'intent']) if (p.get(f)) body[f] = p.get(f);
  const out = h('div', { id: 'pack' }, h('p', { class: 'muted' }, 'Recalling…'));
  main.append(out);
  const pack = await api('/v1/recall', body);
  if (!current(g)) return;
  out.replaceChildren(...packView(pack));
  drawPaths(out, pack);
}

function packView(pack) {
  const s = pack.state;
  const constraints = Object.entries(s.constraints || {}).map(([k, v]) => k + '=' + v).join(', ');
  const head = h('div', { class: 'card' },
    h('strong', {}, pack.items.length + ' items'), ' for “', pack.query, '” — intent ', pack.intent,
    pack.intent_classified ? ' (classified)' : ' (given)', '; ', pack.candidates, ' candidates',
    pack.trimmed ? '; ' + pack.trimmed + ' trimmed to the budget' : '',
    h('div', { class: 'small muted' },
      s.cues.length ? 'cues: ' + s.cues.join(', ') + '. ' : '',
      constraints ? 'constraints: ' + constraints + '. ' : '',
      s.time_span ? 'spanning ' + when(s.time_span[0]) + ' .. ' + when(s.time_span[1]) + '. ' : '',
      s.anchors.length ? ['anchors: ', keyLinks(s.anchors), '. '] : '',
      s.named.length ? ['named: ', keyLinks(s.named), '.'] : ''));
  const items = pack.items.map((it, i) => itemView(it, i));
  const unknowns = pack.unknowns.length
    ? [h('h2', {}, 'Unknowns'), h('ul', { id: 'unknowns' }, pack.unknowns.map((u) =>
      h('li', {}, u.kind.replace(/_/g, ' '), ': ', u.missing.label + ':' + u.missing.id, ' (named by ', nodeLink(u.item.label, u.item.id), ')')))]
    : [h('h2', {}, 'Unknowns'), h('p', { class: 'muted', id: 'unknowns' }, 'Nothing the items refer to is missing.')];
  const graphBox = h('div', { class: 'graph short', id: 'packgraph' });
  return [head, h('h2', {}, 'Items'), h('div', { id: 'items' }, items), ...unknowns,
    h('h2', {}, 'The pack as a graph'), h('p', { class: 'small muted' }, 'Items, the nodes on their paths and the edges among them; click a node to open it.'), graphBox];
}

function itemView(it, i) {
  const f = it.factors;
  const n = it.node;
  const prov = it.provenance;
  const failed = n.properties && n.properties.status === 'failed';
  const path = it.path.length
    ? h('div', { class: 'small' }, 'via ', nodeLink(it.seed.label, it.seed.id), it.path.map((st) =>
      [' ', st.forward ? '─' + st.edge_type + (st.qualifier ? '(' + st.qualifier + ')' : '') + '→' : '←' + st.edge_type + (st.qualifier ? '(' + st.qualifier + ')' : '') + '─', ' ', nodeLink(st.to.label, st.to.id)]))
    : h('div', { class: 'small' }, 'found by ', it.found_by.join(' + '), ': ', nodeLink(it.seed.label, it.seed.id));
  return h('div', { class: 'card item', 'data-item': n.label + ':' + n.id },
    h('div', { class: 'rank' }, String(i + 1)),
    h('div', {},
      h('div', {}, h('span', { class: 'score' }, fixed(it.score, 3)), ' ', h('span', { class: 'chip' }, n.label), ' ',
        nodeLink(n.label, n.id), ' ', n.properties && n.properties.occurred_at ? h('span', { class: 'muted small' }, when(n.properties.occurred_at)) : '',
        n.properties && n.properties.session_id ? [' ', h('a', { class: 'small', href: '#/session/' + enc(n.properties.session_id) }, n.properties.session_id)] : ''),
      h('div', { class: failed ? 'failed' : '' }, describe(n)),
      path,
      h('div', { class: 'factors' },
        'relevance ', fixed(f.relevance), ' × path ', fixed(f.path_weight), ' × confidence ', fixed(f.confidence),
        ' × salience ', fixed(f.salience), ' × focus ', fixed(f.focus), ' × match ', fixed(f.matched),
        prov.log_position !== undefined ? '; log position ' + prov.log_position : '', prov.created_by ? ', by ' + prov.created_by : '',
        prov.source ? ', source ' + prov.source : '')),
    it.path.length ? h('div', { class: 'pathgraph', 'data-path': String(i) }) : h('div', {}));
}

function drawPaths(out, pack) {
  if (!available()) return;
  const open = (label, id) => go(nodeHref(label, id));
  // Each item's path (seed, the steps, the item), drawn once it scrolls into view, so a pack
  // of a hundred items costs the drawings on screen.
  const seen = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      seen.unobserve(entry.target);
      drawPath(entry.target, pack.items[Number(entry.target.dataset.path)], open);
    }
  }, { rootMargin: '200px' });
  for (const box of out.querySelectorAll('.pathgraph')) seen.observe(box);
  drawPack(out, pack, open);
}

/** One item's path, left to right, seed first, one step apart. */
function drawPath(box, it, open) {
  const els = [{ group: 'nodes', data: { id: it.seed.label + ':' + it.seed.id, label: it.seed.label, nid: it.seed.id, caption: it.seed.id }, classes: 'seed', position: { x: 0, y: 0 } }];
  let prev = it.seed.label + ':' + it.seed.id;
  for (const [j, st] of it.path.entries()) {
    const id = st.to.label + ':' + st.to.id;
    els.push({ group: 'nodes', data: { id, label: st.to.label, nid: st.to.id, caption: st.to.id }, position: { x: 150 * (j + 1), y: 0 } });
    els.push(st.forward ? edgeElement(st.edge_type, prev, id) : edgeElement(st.edge_type, id, prev));
    prev = id;
  }
  draw(box, els, { layout: { name: 'preset', padding: 30 }, onTap: open, zoom: false, maxZoom: 1.2 });
}

/** The whole pack: its items, the nodes on their paths and the edges among them. */
function drawPack(out, pack, open) {
  const els = new Map();
  const add = (el) => { if (!els.has(el.data.id)) els.set(el.data.id, el); };
  for (const it of pack.items) add(nodeElement(it.node));
  for (const it of pack.items) {
    let prev = it.seed.label + ':' + it.seed.id;
    add({ group: 'nodes', data: { id: prev, label: it.seed.label, nid: it.seed.id, caption: it.seed.id } });
    for (const st of it.path) {
      const id = st.to.label + ':' + st.to.id;
      add({ group: 'nodes', data: { id, label: st.to.label, nid: st.to.id, caption: st.to.id } });
      add(st.forward ? edgeElement(st.edge_type, prev, id) : edgeElement(st.edge_type, id, prev));
      prev = id;
    }
  }
  for (const e of pack.edges) {
    const a = e.from.label + ':' + e.from.id;
    const b = e.to.label + ':' + e.to.id;
    if (els.has(a) && els.has(b)) add(edgeElement(e.type, a, b));
  }
  draw(out.querySelector('#packgraph'), [...els.values()], { onTap: open });
}

// ------------------------------------------------------------------------------------------
// Node: properties, provenance, and a neighbourhood expandable by click, a page per group.

const FIRST_PAGE = 12;

async function node(main, r, g) {
  main.append(h('h1', {}, 'Node'));
  const form = h('form', { class: 'query' },
    field('Id', 'id', r.arg, { size: 24, placeholder: 'evt-000032' }),
    field('or search', 'search', r.params.get('search'), { size: 28, placeholder: 'timeout mail-relay' }),
    h('button', { type: 'submit' }, 'Open'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = formValues(form);
    go(v.id ? '#/node/' + enc(v.id) : '#/node' + qs({ search: v.search }));
  });
  main.append(form);
  if (!r.arg) {
    const s = r.params.get('search');
    if (!s) {
      main.append(h('p', { class: 'muted' }, 'Give a node id, or search the text of events, entities, summaries, facts and memories.'));
      return;
    }
    const res = await api('/v1/search', { query: s, limit: 30 });
    if (!current(g)) return;
    main.append(h('h2', {}, res.hits.length + ' hits'), h('table', { id: 'hits' },
      h('tr', {}, h('th', {}, 'node'), h('th', {}, 'what'), h('th', { class: 'num' }, 'score')),
      res.hits.map((hit) => h('tr', {}, h('td', {}, nodeLink(hit.node.label, hit.node.id)), h('td', {}, describe(hit.node)), h('td', { class: 'num' }, fixed(hit.score))))));
    return;
  }
  const list = await api('/v1/nodes/' + enc(r.arg) + qs({ label: r.params.get('label') }));
  if (!current(g)) return;
  for (const d of list.nodes) main.append(nodeDetail(d));
}

function nodeDetail(d) {
  const n = d.node;
  const key = n.label + ':' + n.id;
  const pv = d.provenance;
  const graphBox = h('div', { class: 'graph', 'data-graph': key });
  const groups = h('div', { class: 'groups' });
  const section = h('section', { 'data-node-detail': key },
    h('h2', {}, h('span', { class: 'chip' }, n.label), n.id),
    h('p', { class: n.properties.status === 'failed' ? 'failed' : '' }, describe(n)),
    n.properties.session_id ? h('p', {}, 'Session ', h('a', { href: '#/session/' + enc(n.properties.session_id) }, n.properties.session_id)) : '',
    n.label === 'Entity' ? h('p', {}, h('a', { href: '#/entity/' + enc(n.id) }, 'Facts and mentions of this entity')) : '',
    h('p', { class: 'small muted' }, 'Provenance: ', pv.log_position !== undefined ? 'log position ' + pv.log_position + ', ' : 'derived, ',
      pv.recorded_at ? 'recorded ' + when(pv.recorded_at) + ', ' : '', 'by ', pv.created_by || '—', pv.source ? ', source ' + pv.source : ''),
    h('div', { class: 'cols' },
      h('div', {}, h('h2', {}, 'Neighbourhood'), h('p', { class: 'small muted' }, 'Click a node to add its neighbours; double-click to open it.'), graphBox, groups),
      h('div', {}, h('h2', {}, 'Properties'), h('pre', {}, JSON.stringify(n.properties, null, 2)))));
  let cy = null;
  const tapped = new Set([key]);
  const expandNode = async (label, id) => {
    const k = label + ':' + id;
    if (tapped.has(k)) return;
    tapped.add(k);
    const det = await api('/v1/nodes/' + enc(id) + qs({ label }));
    for (const grp of det.nodes[0].edges) {
      const page = await api('/v1/nodes/' + enc(id) + '/neighbors' + qs({ label, edge_type: grp.type, direction: grp.direction, limit: 6 }));
      extend(cy, elementsOf(label, id, grp, page.neighbors));
    }
  };
  // Each group: a table of its first page, more pages on demand; the graph grows with them.
  const first = [nodeElement(n, undefined, 'center')];
  const loads = d.edges.map(async (grp) => {
    const rows = h('tbody', {});
    const more = h('button', { type: 'button' }, 'more');
    let cursor = null;
    const load = async (limit) => {
      const page = await api('/v1/nodes/' + enc(n.id) + '/neighbors' + qs({ label: n.label, edge_type: grp.type, direction: grp.direction, limit, cursor }));
      cursor = page.next_cursor || null;
      more.hidden = !cursor;
      for (const nb of page.neighbors) {
        rows.append(h('tr', { 'data-neighbor': nb.node.label + ':' + nb.node.id },
          h('td', {}, grp.direction === 'out' ? '→' : '←'), h('td', {}, nodeLink(nb.node.label, nb.node.id)), h('td', { class: nb.node.properties.status === 'failed' ? 'failed' : '' }, describe(nb.node))));
      }
      return page.neighbors;
    };
    more.addEventListener('click', async () => {
      const added = await load(50);
      if (cy) extend(cy, elementsOf(n.label, n.id, grp, added));
    });
    groups.append(h('div', { class: 'card', 'data-group': grp.type + ':' + grp.direction },
      h('strong', {}, grp.direction === 'out' ? grp.type + ' →' : '← ' + grp.type), ' ',
      h('span', { class: 'muted' }, grp.count + (grp.more ? '+' : '') + ' neighbours'),
      h('table', {}, rows), more));
    first.push(...elementsOf(n.label, n.id, grp, await load(FIRST_PAGE)));
  });
  Promise.all(loads).then(() => {
    cy = draw(graphBox, first, {
      onTap: (label, id) => expandNode(label, id).catch((e) => section.append(errorBox(e))),
    });
    if (cy) {
      cy.on('dbltap', 'node', (ev) => go(nodeHref(ev.target.data('label'), ev.target.data('nid'))));
      // The drawing, for scripts that drive the page (the browser test taps a node).
      graphBox.cy = cy;
      graphBox.dataset.drawn = '';
    }
  }).catch((e) => section.append(errorBox(e)));
  return section;
}

function elementsOf(label, id, grp, neighbors) {
  const center = label + ':' + id;
  const out = [];
  for (const nb of neighbors) {
    const other = nb.node.label + ':' + nb.node.id;
    out.push(nodeElement(nb.node));
    out.push(grp.direction === 'out' ? edgeElement(grp.type, center, other) : edgeElement(grp.type, other, center));
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// Session timeline: events in order with the gaps between them, failures marked, causal arcs.

const TIMELINE_PAGE = 100;

async function session(main, r, g) {
  main.append(h('h1', {}, 'Session timeline'));
  const form = h('form', { class: 'query' }, field('Session', 'id', r.arg, { size: 24, placeholder: 'sess-0003' }), h('button', { type: 'submit' }, 'Open'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); go('#/session/' + enc(formValues(form).id)); });
  main.append(form);
  if (!r.arg) {
    main.append(h('p', { class: 'muted' }, 'Give a session id (an event\'s session links here too).'));
    return;
  }
  const graphBox = h('div', { class: 'graph short', id: 'timelinegraph' });
  const rows = h('tbody', {});
  const status = h('p', { class: 'small muted' });
  const more = h('button', { type: 'button', hidden: true }, 'load more');
  main.append(h('p', { class: 'small muted' }, 'Events left to right in time order; dashed: FOLLOWS, arcs: CAUSED_BY, red: failed.'), graphBox,
    h('table', { id: 'timeline' }, h('thead', {}, h('tr', {}, h('th', {}, '#'), h('th', {}, 'time'), h('th', {}, 'gap'), h('th', {}, 'event'), h('th', {}, 'what'), h('th', {}, 'caused by'))), rows),
    status, more);
  const events = [];
  let cursor = null;
  let cy = null;
  const load = async () => {
    const page = await api('/v1/sessions/' + enc(r.arg) + '/timeline' + qs({ limit: TIMELINE_PAGE, cursor }));
    if (!current(g)) return;
    cursor = page.next_cursor || null;
    const els = [];
    for (const t of page.events) {
      const e = t.event;
      const p = e.properties;
      const prev = events[events.length - 1];
      const gap = prev ? gapOf(prev.event.properties.occurred_at, p.occurred_at) : '';
      const i = events.length;
      events.push(t);
      rows.append(h('tr', { class: p.status === 'failed' ? 'failed' : '', 'data-event': e.id },
        h('td', { class: 'num' }, String(i + 1)), h('td', { class: 'small' }, when(p.occurred_at)), h('td', { class: 'gap' }, gap),
        h('td', {}, nodeLink('Event', e.id, e.id)), h('td', { class: p.status === 'failed' ? 'failed' : '' }, describe(e)),
        h('td', {}, t.caused_by.map((c, j) => [j ? ', ' : '', nodeLink('Event', c, c)]), t.missing_parent ? h('span', { class: 'muted' }, ' missing ' + t.missing_parent) : '')));
      const el = nodeElement(e, String(i + 1));
      el.position = { x: i * 46, y: 0 };
      els.push(el);
      if (prev) els.push(edgeElement('FOLLOWS', 'Event:' + prev.event.id, 'Event:' + e.id, { caption: '' }));
    }
    const known = new Set(events.map((t) => 'Event:' + t.event.id));
    for (const t of page.events) {
      for (const c of t.caused_by) {
        // An arc bends more the further apart its two events are, so arcs do not overlap.
        const span = events.findIndex((x) => x.event.id === t.event.id) - events.findIndex((x) => x.event.id === c);
        if (known.has('Event:' + c)) els.push(edgeElement('CAUSED_BY', 'Event:' + t.event.id, 'Event:' + c, { caption: '', bend: 18 + 7 * Math.abs(span) }));
      }
    }
    for (const el of els) if (el.group === 'edges' && el.data.source !== el.data.target && el.classes === 'CAUSED_BY') el.classes += ' arc';
    if (!cy) {
      cy = draw(graphBox, els, { layout: { name: 'preset', padding: 20 }, onTap: (label, id) => go(nodeHref(label, id)) });
    } else {
      cy.add(els.filter((el) => cy.getElementById(el.data.id).empty()));
      cy.fit(undefined, 20);
    }
    status.textContent = events.length + ' events' + (cursor ? ' so far' : '') + ', ' + events.filter((t) => t.event.properties.status === 'failed').length + ' failed';
    more.hidden = !cursor;
  };
  more.addEventListener('click', () => load().catch((e) => main.append(errorBox(e))));
  await load();
}

function gapOf(a, b) {
  const ms = Date.parse(b) - Date.parse(a);
  if (!Number.isFinite(ms)) return '';
  if (Math.abs(ms) < 1000) return '+' + ms + ' ms';
  if (Math.abs(ms) < 120000) return '+' + (ms / 1000).toFixed(1) + ' s';
  if (Math.abs(ms) < 7200000) return '+' + (ms / 60000).toFixed(1) + ' min';
  return '+' + (ms / 3600000).toFixed(1) + ' h';
}

// ------------------------------------------------------------------------------------------
// Decisions: the topics, a topic's evolution chain with outcomes, a memory's impact.

async function topic(main, r, g) {
  main.append(h('h1', {}, 'Decisions'));
  if (!r.arg) {
    const page = await api('/v1/memories' + qs({ kind: 'decision', limit: 200 }));
    if (!current(g)) return;
    const topics = new Map();
    for (const m of page.memories) if (m.topic) topics.set(m.topic, (topics.get(m.topic) || 0) + 1);
    main.append(topics.size
      ? h('ul', { id: 'topics' }, [...topics].map(([t, n]) => h('li', {}, h('a', { href: '#/topic/' + enc(t) }, t), h('span', { class: 'muted' }, ' ' + n + ' decisions'))))
      : h('p', { class: 'muted' }, 'No decisions visible yet (ctxgraph memory save, or POST /v1/memories).'));
    if (page.next_cursor) main.append(h('p', { class: 'small muted' }, 'Topics of the newest 200 decisions.'));
    return;
  }
  const evo = await api('/v1/topics/' + enc(r.arg) + '/evolution');
  if (!current(g)) return;
  main.append(h('h2', {}, 'Topic ', r.arg), h('p', {}, evo.summary));
  const graphBox = h('div', { class: 'graph short', id: 'chaingraph' });
  main.append(graphBox);
  const els = [];
  evo.steps.forEach((s, i) => {
    const m = s.memory;
    main.append(h('div', { class: 'card step' + (i === 0 ? ' current' : ''), 'data-memory': m.id },
      h('div', {}, h('strong', {}, m.content), ' ', h('span', { class: 'muted small' }, when(m.created_at), ' by ', m.created_by, ', confidence ', fixed(m.confidence))),
      m.reasoning ? h('div', { class: 'small' }, 'Why: ', m.reasoning) : '',
      s.via ? h('div', { class: 'small muted' }, 'reached by ', s.via.replace(/_/g, ' '), s.explicit ? ' (explicit link)' : '', s.supersedes_confidence !== undefined ? ', link confidence ' + fixed(s.supersedes_confidence) : '') : '',
      h('div', {}, s.outcomes.length ? s.outcomes.map((o) => h('div', {}, h('span', { class: 'chip ' + (o.outcome === 'failed' ? 'fail' : o.outcome) }, o.outcome), ' ', o.reason, h('span', { class: 'muted small' }, ' ' + when(o.at)))) : h('span', { class: 'muted small' }, 'no outcome recorded')),
      h('div', { class: 'small' }, h('a', { href: '#/topic/' + enc(r.arg) + qs({ memory: m.id }) }, 'impact of this decision'), ' · ', nodeLink('Memory', m.id, 'node'))));
    const failed = s.outcomes.some((o) => o.outcome === 'failed');
    els.push({ group: 'nodes', data: { id: 'Memory:' + m.id, label: 'Memory', nid: m.id, caption: (i === 0 ? 'in force: ' : '') + m.content.slice(0, 40), failed } });
    if (i > 0) els.push(edgeElement((s.via || 'supersedes').toUpperCase(), 'Memory:' + evo.steps[i - 1].memory.id, 'Memory:' + m.id));
  });
  draw(graphBox, els, { layout: { name: 'breadthfirst', directed: true, padding: 20 }, onTap: (label, id) => go('#/topic/' + enc(r.arg) + qs({ memory: id })) });
  const mem = r.params.get('memory');
  if (mem) {
    const imp = await api('/v1/memories/' + enc(mem) + '/impact');
    if (!current(g)) return;
    main.append(h('h2', { id: 'impact' }, 'Impact of ', mem), h('p', {}, imp.summary),
      h('table', {}, h('tr', {}, h('th', {}, 'memory'), h('th', {}, 'via'), h('th', {}, 'from'), h('th', { class: 'num' }, 'depth'), h('th', { class: 'num' }, 'confidence')),
        imp.items.map((it) => h('tr', {}, h('td', {}, it.memory.content), h('td', {}, it.via), h('td', {}, it.from), h('td', { class: 'num' }, String(it.depth)), h('td', { class: 'num' }, fixed(it.confidence))))),
      imp.superseded_by.length ? h('p', {}, 'Superseded by: ', imp.superseded_by.map((m) => m.content).join('; ')) : '');
  }
}

// ------------------------------------------------------------------------------------------
// Entity: facts true now and at a date, contradictions, sources, mentions.

async function entity(main, r, g) {
  main.append(h('h1', {}, 'Entity'));
  const form = h('form', { class: 'query' },
    field('Entity', 'id', r.arg, { size: 28, placeholder: 'mail-relay or service:mail-relay' }),
    field('Facts at', 'as_of', r.params.get('as_of'), { size: 14, placeholder: 'YYYY-MM-DD' }),
    h('button', { type: 'submit' }, 'Open'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); const v = formValues(form); go('#/entity/' + enc(v.id) + qs({ as_of: v.as_of })); });
  main.append(form);
  if (!r.arg) {
    main.append(h('p', { class: 'muted' }, 'Name an entity (a name, an alias or an id): its facts now and at a date, contradictions, sources and the events that mention it.'));
    return;
  }
  const now = await api('/v1/entities/recall', { entity: r.arg });
  if (!current(g)) return;
  const ent = now.entity;
  main.append(h('h2', {}, h('span', { class: 'chip' }, 'Entity'), nodeLink('Entity', ent.id), ' ', h('span', { class: 'muted small' }, 'matched by ' + now.via)),
    h('p', { class: 'small muted' }, [ent.properties.mention_count !== undefined ? ent.properties.mention_count + ' mentions' : '', ent.properties.first_seen ? ', first seen ' + when(ent.properties.first_seen) : '', ent.properties.last_seen ? ', last seen ' + when(ent.properties.last_seen) : ''].join('')),
    h('h2', {}, 'Facts true now'), factsTable(now.facts.filter((f) => f.active), 'facts-now'));
  const asOf = r.params.get('as_of');
  if (asOf) {
    const then = await api('/v1/entities/recall', { entity: ent.id, as_of: asOf });
    if (!current(g)) return;
    main.append(h('h2', {}, 'Facts true at ', asOf), factsTable(then.facts.filter((f) => f.active), 'facts-then'));
  }
  const contested = now.facts.filter((f) => f.contradicted_by.length);
  main.append(h('h2', {}, 'Contradictions'), contested.length ? factsTable(contested, 'contradictions') : h('p', { class: 'muted', id: 'contradictions' }, 'None.'));
  const past = now.facts.filter((f) => !f.active);
  if (past.length) main.append(h('h2', {}, 'No longer true'), factsTable(past, 'facts-past'));
  // Mentions: the edges arriving at the entity (events referencing it, sentences mentioning it), a page each.
  const det = await api('/v1/nodes/' + enc(ent.id) + qs({ label: 'Entity' }));
  if (!current(g)) return;
  const mentions = h('div', { id: 'mentions' });
  main.append(h('h2', {}, 'Mentions'), mentions);
  for (const grp of det.nodes[0].edges.filter((x) => x.direction === 'in')) {
    const page = await api('/v1/nodes/' + enc(ent.id) + '/neighbors' + qs({ label: 'Entity', edge_type: grp.type, direction: 'in', limit: 20 }));
    if (!current(g)) return;
    mentions.append(h('div', { class: 'card' }, h('strong', {}, grp.type), ' ', h('span', { class: 'muted' }, grp.count + (grp.more ? '+' : '')),
      h('table', {}, page.neighbors.map((nb) => h('tr', {}, h('td', {}, nodeLink(nb.node.label, nb.node.id)), h('td', {}, when(nb.node.properties.occurred_at)), h('td', {}, describe(nb.node))))),
      page.next_cursor ? h('a', { href: nodeHref('Entity', ent.id) }, 'all of them in the node view') : ''));
  }
}

function factsTable(facts, id) {
  if (!facts.length) return h('p', { class: 'muted', id }, 'None.');
  return h('table', { id },
    h('tr', {}, h('th', {}, 'fact'), h('th', {}, 'valid'), h('th', { class: 'num' }, 'confidence'), h('th', {}, 'sources'), h('th', {}, 'contradicted by')),
    facts.map((f) => h('tr', {},
      h('td', {}, f.subject.name, ' ', h('em', {}, f.predicate), ' ', f.object ? f.object.name : JSON.stringify(f.literal)),
      h('td', { class: 'small' }, (f.valid_from ? when(f.valid_from) : '…') + ' – ' + (f.valid_to ? when(f.valid_to) : '…'), f.retracted_at ? ' retracted ' + when(f.retracted_at) : ''),
      h('td', { class: 'num' }, fixed(f.confidence)),
      h('td', { class: 'small' }, f.sources.join(', '), f.citations.map((c) => h('div', { class: 'muted' }, '“' + c.text + '”'))),
      h('td', { class: 'small' }, f.contradicted_by.join(', ')))));
}

// ------------------------------------------------------------------------------------------
// Health: what the principal may count; for the store's owner, the store's own figures.

async function health(main, r, g) {
  main.append(h('h1', {}, 'Health'));
  const me = await api('/v1/whoami');
  if (!current(g)) return;
  const row = (k, v) => h('tr', {}, h('td', {}, k), h('td', { class: 'num' }, String(v)));
  if (!me.owner) {
    // A principal counts what it may see (every event is read to decide it).
    const s = await api('/v1/stats');
    if (!current(g)) return;
    main.append(h('table', { id: 'visible' }, h('tr', {}, h('th', {}, 'visible to ' + me.name), h('th', { class: 'num' }, 'count')),
      row('tenant', s.tenant), row('events', s.events), row('memories', s.memories)),
    h('p', { class: 'muted', id: 'owner-only' }, 'The log, lags, counts per type, size and retention tiers read past the access policy: only the store\'s owner sees them (ctxgraph ui without --as).'));
    return;
  }
  const st = await api('/v1/stats/store');
  if (!current(g)) return;
  main.append(h('div', { class: 'cols' },
    h('div', {}, h('h2', {}, 'Log and stages'), h('table', { id: 'stages' },
      row('log records', st.log_length), row('projection lag (records not in the graph yet)', st.projection_lag),
      row('enrichment lag (records not enriched yet)', st.enrichment_lag), row('edges waiting for an endpoint', st.pending_edges),
      row('vectors', st.vectors), row('vectors not in the vector index yet', st.unindexed_vectors),
      row('full-text documents', st.text_documents), row('documents not in the lexical index yet', st.text_documents_outside_lexical_index),
      row('size on disk', bytes(st.bytes_on_disk)), row('format version', st.format_version))),
    h('div', {}, h('h2', {}, 'Nodes'), h('table', { id: 'nodes' }, st.nodes.map((c) => row(c.name, c.count))),
      h('h2', {}, 'Edges'), h('table', { id: 'edges' }, st.edges.map((c) => row(c.name, c.count))))));
  // The tiers read every event: asked for apart, after the figures above are on the page.
  const tiers = h('div', { id: 'tiers' }, h('p', { class: 'muted' }, 'Counting events per retention tier…'));
  main.append(h('h2', {}, 'Retention tiers'), tiers);
  const t = await api('/v1/stats/retention');
  if (!current(g)) return;
  tiers.replaceChildren(h('table', {},
    row('hot (under a day old)', t.hot), row('warm (under a week)', t.warm), row('cold (under 30 days)', t.cold),
    row('due for the archive (older)', t.archive), row('archived by earlier passes (in the log only)', t.archived)),
  h('p', { class: 'small muted' }, 'Ages measured at ', t.as_of ? when(t.as_of) : '—', ' (the newest event), under the default tiers; ctxgraph retention shows what a pass would do, --apply applies it.'));
}

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + units[i];
}

export const views = { ask, node, session, topic, entity, health };
