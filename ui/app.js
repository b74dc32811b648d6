// Ingot's web UI: four pages over the node's HTTP API, routed by the URL's fragment
// (#/explore?expr=...), so that a link reproduces what the page shows. Plain DOM and uPlot.
'use strict';

(function () {
  const $ = (sel, root = document) => root.querySelector(sel);
  const main = $('#main');

  // ---- helpers --------------------------------------------------------------------------

  // Builds an element: el('td', {class: 'num'}, 'text', child, ...).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else if (k === 'text') node.textContent = v;
      else node.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  class ApiError extends Error {
    constructor(message, status) {
      super(message);
      this.status = status;
    }
  }

  // GETs a JSON endpoint of the node; throws ApiError with the server's message.
  async function api(path, params) {
    const qs = params ? '?' + new URLSearchParams(params).toString() : '';
    let res;
    try {
      res = await fetch(path + qs, {headers: {Accept: 'application/json'}});
    } catch (e) {
      throw new ApiError('the node did not answer (' + e.message + ')', 0);
    }
    const text = await res.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch (e) {
      throw new ApiError(res.status + ': ' + text.slice(0, 300), res.status);
    }
    if (!res.ok || body.status === 'error') {
      throw new ApiError(body.error || res.status + ' ' + res.statusText, res.status);
    }
    body.rawText = text;
    return body;
  }

  const fmtInt = (n) => Number(n).toLocaleString('en-US', {maximumFractionDigits: 0});
  function fmtNum(n, digits = 2) {
    if (n === null || n === undefined || Number.isNaN(n)) return '–';
    return Number(n).toLocaleString('en-US', {maximumFractionDigits: digits});
  }
  function fmtBytes(n) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? fmtInt(n) : n.toFixed(1)) + ' ' + units[i];
  }
  const plural = (n, word) => fmtInt(n) + ' ' + word + (n === 1 ? '' : 's');
  const isoTime = (sec) => new Date(sec * 1000).toISOString().replace('.000Z', 'Z');

  // A series' labels as PromQL text: name{a="b"}.
  function seriesName(metric) {
    const name = metric.__name__ || '';
    const labels = Object.keys(metric).filter((k) => k !== '__name__').sort()
      .map((k) => k + '=' + JSON.stringify(metric[k]));
    return labels.length || !name ? name + '{' + labels.join(', ') + '}' : name;
  }
  // A selector for exactly this series (drill-down links).
  function seriesSelector(metric) {
    const parts = Object.keys(metric).filter((k) => k !== '__name__').sort()
      .map((k) => k + '=' + JSON.stringify(metric[k]));
    return (metric.__name__ || '') + '{' + parts.join(',') + '}';
  }

  // "5m", "1h", "2d", "30s" or plain seconds -> seconds; NaN when unreadable.
  function parseDuration(text) {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w|y)?\s*$/.exec(text || '');
    if (!m) return NaN;
    const mult = {ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000}[m[2] || 's'];
    return Number(m[1]) * mult;
  }
  function fmtDuration(sec) {
    for (const [u, s] of [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]]) {
      if (sec >= s && sec % s === 0) return sec / s + u;
    }
    return String(sec) + 's';
  }

  // ---- routing: the page and its state live in the fragment ------------------------------

  function currentRoute() {
    const hash = location.hash.replace(/^#/, '') || '/explore';
    const q = hash.indexOf('?');
    const path = q < 0 ? hash : hash.slice(0, q);
    const params = new URLSearchParams(q < 0 ? '' : hash.slice(q + 1));
    return {page: path.replace(/^\//, '') || 'explore', params};
  }
  // Writes the page's state into the URL; `push` makes a history entry (Back returns to it).
  function setRoute(page, state, push) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(state)) {
      if (v !== undefined && v !== null && v !== '') params.set(k, v);
    }
    const qs = params.toString();
    const url = '#/' + page + (qs ? '?' + qs : '');
    if (url === location.hash) return;
    suppressRender = true;
    if (push) history.pushState(null, '', url);
    else history.replaceState(null, '', url);
    suppressRender = false;
  }
  let suppressRender = false;
  let cleanup = null;  // the current page's teardown (timers, charts)

  const pages = {};
  function render() {
    if (cleanup) { cleanup(); cleanup = null; }
    const {page, params} = currentRoute();
    const show = pages[page] ? page : 'explore';
    for (const a of document.querySelectorAll('.top nav a')) {
      if (a.dataset.page === show) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    main.replaceChildren();
    document.title = 'Ingot · ' + show[0].toUpperCase() + show.slice(1);
    cleanup = pages[show](params) || null;
  }
  window.addEventListener('hashchange', () => { if (!suppressRender) render(); });

  // ---- time range: presets or an absolute range ----------------------------------------

  const kPresets = ['5m', '15m', '1h', '3h', '6h', '12h', '1d', '2d', '7d', '30d'];

  // state: {range} (relative to now) or {start, end} (unix seconds).
  function resolveRange(state) {
    if (state.start && state.end) {
      return {start: Number(state.start), end: Number(state.end)};
    }
    const end = Math.floor(Date.now() / 1000);
    const range = parseDuration(state.range || '1h') || 3600;
    return {start: end - range, end};
  }
  function toLocalInput(sec) {
    const d = new Date(sec * 1000);
    const pad = (n) => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  // The range controls: a preset select (with "custom"), and start/end inputs for custom.
  function rangeControls(state, onChange) {
    const select = el('select', {id: 'range', 'aria-label': 'Time range'},
      kPresets.map((p) => el('option', {value: p}, 'Last ' + p)),
      el('option', {value: 'custom'}, 'Custom range'));
    const start = el('input', {type: 'datetime-local', id: 'range-start', step: '1', 'aria-label': 'Start'});
    const end = el('input', {type: 'datetime-local', id: 'range-end', step: '1', 'aria-label': 'End'});
    const custom = el('span', {class: 'row'}, start, end);
    function sync() {
      const isCustom = Boolean(state.start && state.end);
      select.value = isCustom ? 'custom' : (state.range || '1h');
      if (!isCustom && !kPresets.includes(select.value)) {
        select.append(el('option', {value: state.range}, 'Last ' + state.range));
        select.value = state.range;
      }
      custom.hidden = !isCustom;
      if (isCustom) {
        start.value = toLocalInput(Number(state.start));
        end.value = toLocalInput(Number(state.end));
      }
    }
    select.addEventListener('change', () => {
      if (select.value === 'custom') {
        const r = resolveRange(state);
        state.start = String(r.start);
        state.end = String(r.end);
        delete state.range;
      } else {
        state.range = select.value;
        delete state.start;
        delete state.end;
      }
      sync();
      onChange();
    });
    for (const input of [start, end]) {
      input.addEventListener('change', () => {
        const s = Date.parse(start.value) / 1000;
        const e = Date.parse(end.value) / 1000;
        if (Number.isFinite(s) && Number.isFinite(e) && e > s) {
          state.start = String(Math.floor(s));
          state.end = String(Math.floor(e));
          onChange();
        }
      });
    }
    sync();
    const wrap = el('div', {}, el('label', {for: 'range'}, 'Range'), el('div', {class: 'row'}, select, custom));
    wrap.sync = sync;
    return wrap;
  }

  // ---- autocomplete for PromQL ---------------------------------------------------------

  const kFunctions = ['abs', 'absent', 'absent_over_time', 'avg', 'avg_over_time', 'bottomk', 'ceil',
    'changes', 'clamp', 'clamp_max', 'clamp_min', 'count', 'count_over_time', 'count_values', 'delta',
    'deriv', 'exp', 'floor', 'group', 'histogram_quantile', 'idelta', 'increase', 'irate',
    'label_join', 'label_replace', 'last_over_time', 'ln', 'log10', 'log2', 'max', 'max_over_time',
    'min', 'min_over_time', 'predict_linear', 'quantile', 'quantile_over_time', 'rate', 'resets',
    'round', 'scalar', 'sort', 'sort_desc', 'sqrt', 'stddev', 'stddev_over_time', 'stdvar', 'sum',
    'sum_over_time', 'time', 'timestamp', 'topk', 'vector'];

  const cache = new Map();
  async function cached(key, fn) {
    if (!cache.has(key)) cache.set(key, fn().catch((e) => { cache.delete(key); throw e; }));
    return cache.get(key);
  }
  const metricNames = () => cached('names', async () => (await api('/api/v1/label/__name__/values')).data);
  const labelNames = (metric) => cached('labels:' + metric, async () =>
    (await api('/api/v1/labels', metric ? {'match[]': metric} : undefined)).data.filter((n) => n !== '__name__'));
  const labelValues = (name, metric) => cached('values:' + name + ':' + metric, async () =>
    (await api('/api/v1/label/' + encodeURIComponent(name) + '/values', metric ? {'match[]': metric} : undefined)).data);

  // What to suggest at the caret: {kind, prefix, from, metric, label}.
  function completionContext(text, caret) {
    const before = text.slice(0, caret);
    // Inside a quoted label value: name="pre|
    let m = /([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"\\]*)$/.exec(before);
    const open = before.lastIndexOf('{');
    const close = before.lastIndexOf('}');
    const inBraces = open > close;
    const metricBefore = (pos) => {
      const mm = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*$/.exec(text.slice(0, pos));
      return mm ? mm[1] : '';
    };
    if (m && inBraces) {
      return {kind: 'value', prefix: m[3], from: caret - m[3].length, label: m[1], metric: metricBefore(open)};
    }
    if (inBraces) {
      m = /(?:[{,]\s*)([a-zA-Z_][a-zA-Z0-9_]*)?$/.exec(before);
      if (m) {
        const prefix = m[1] || '';
        return {kind: 'label', prefix, from: caret - prefix.length, metric: metricBefore(open)};
      }
      return null;
    }
    m = /([a-zA-Z_:][a-zA-Z0-9_:]*)$/.exec(before);
    if (!m) return null;
    return {kind: 'metric', prefix: m[1], from: caret - m[1].length};
  }

  // Attaches a suggestion list to a textarea or input. `onAccept` runs after a pick.
  function attachAutocomplete(input, list, onEnter) {
    let items = [];
    let active = -1;
    let ctx = null;
    let seq = 0;
    function close() {
      list.hidden = true;
      list.replaceChildren();
      items = [];
      active = -1;
      input.setAttribute('aria-expanded', 'false');
      input.removeAttribute('aria-activedescendant');
    }
    function highlight(i) {
      active = i;
      [...list.children].forEach((li, j) => li.setAttribute('aria-selected', j === i ? 'true' : 'false'));
      if (i >= 0) {
        input.setAttribute('aria-activedescendant', list.children[i].id);
        list.children[i].scrollIntoView({block: 'nearest'});
      }
    }
    function accept(i) {
      const item = items[i];
      if (!item || !ctx) return;
      const text = input.value;
      const caret = input.selectionStart;
      let insert = item.text;
      if (ctx.kind === 'value') {
        const rest = text.slice(caret);
        insert += rest.startsWith('"') ? '' : '"';
      } else if (ctx.kind === 'label') {
        insert += '="';
      }
      input.value = text.slice(0, ctx.from) + insert + text.slice(caret).replace(ctx.kind === 'value' ? /^[^"]*/ : /^[a-zA-Z0-9_:]*/, '');
      const pos = ctx.from + insert.length;
      input.setSelectionRange(pos, pos);
      close();
      input.dispatchEvent(new Event('input'));
    }
    async function update() {
      const my = ++seq;
      ctx = completionContext(input.value, input.selectionStart);
      if (!ctx) return close();
      let candidates = [];
      try {
        if (ctx.kind === 'metric') {
          const names = await metricNames();
          candidates = names.map((n) => ({text: n, note: 'metric'}))
            .concat(kFunctions.map((f) => ({text: f, note: 'function'})));
        } else if (ctx.kind === 'label') {
          candidates = (await labelNames(ctx.metric)).map((n) => ({text: n, note: 'label'}));
        } else {
          candidates = (await labelValues(ctx.label, ctx.metric)).map((v) => ({text: v, note: ctx.label}));
        }
      } catch (e) {
        candidates = [];
      }
      if (my !== seq) return;
      const p = ctx.prefix.toLowerCase();
      items = candidates.filter((c) => c.text.toLowerCase().startsWith(p) && c.text !== ctx.prefix).slice(0, 50);
      if (!items.length || (ctx.kind === 'metric' && !ctx.prefix)) return close();
      list.replaceChildren(...items.map((c, i) => el('li', {
        id: list.id + '-' + i, role: 'option', 'aria-selected': 'false',
        onmousedown: (ev) => { ev.preventDefault(); accept(i); },
      }, el('span', {}, c.text), el('small', {}, c.note))));
      list.hidden = false;
      input.setAttribute('aria-expanded', 'true');
      highlight(0);
    }
    input.addEventListener('input', update);
    input.addEventListener('click', update);
    input.addEventListener('blur', () => setTimeout(close, 100));
    input.addEventListener('keydown', (ev) => {
      const open = !list.hidden && items.length > 0;
      if (open && ev.key === 'ArrowDown') { ev.preventDefault(); highlight((active + 1) % items.length); }
      else if (open && ev.key === 'ArrowUp') { ev.preventDefault(); highlight((active - 1 + items.length) % items.length); }
      else if (open && (ev.key === 'Tab' || ev.key === 'Enter') && active >= 0) { ev.preventDefault(); accept(active); }
      else if (open && ev.key === 'Escape') { ev.preventDefault(); close(); }
      else if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); close(); onEnter(); }
    });
    list.hidden = true;
    return {close};
  }

  // ---- query history (this browser only) ------------------------------------------------

  const kHistoryKey = 'ingot.history';
  function loadHistory() {
    try { return JSON.parse(localStorage.getItem(kHistoryKey)) || []; } catch (e) { return []; }
  }
  function remember(expr) {
    const h = loadHistory().filter((e) => e !== expr);
    h.unshift(expr);
    try { localStorage.setItem(kHistoryKey, JSON.stringify(h.slice(0, 30))); } catch (e) { /* full */ }
  }

  // ---- chart ---------------------------------------------------------------------------

  // Distinct, colour-blind-aware stroke colours (the tests find the lines by them).
  const kPalette = ['#1f77b4', '#d95f02', '#1b9e77', '#7570b3', '#e7298a', '#66a61e', '#a6761d',
    '#e6ab02', '#17becf', '#8c564b', '#bc3d3d', '#4d4d4d'];

  // Draws a matrix result. `onZoom(start, end)` gets a drag-selected range.
  function drawChart(container, result, range, step, onZoom) {
    const xs = [];
    for (let t = range.start; t <= range.end; t += step) xs.push(t);
    const index = new Map(xs.map((t, i) => [t, i]));
    const data = [xs];
    const raw = [null];  // the API's value strings, shown as they are in the legend
    for (const s of result) {
      const ys = new Array(xs.length).fill(null);
      const rs = new Array(xs.length).fill(null);
      for (const [t, v] of s.values) {
        let i = index.get(t);
        if (i === undefined) i = Math.round((t - range.start) / step);
        if (i >= 0 && i < xs.length) { ys[i] = Number(v); rs[i] = v; }
      }
      data.push(ys);
      raw.push(rs);
    }
    const width = Math.max(280, container.clientWidth || 800);
    const opts = {
      width,
      height: width < 600 ? 260 : 360,
      cursor: {drag: {x: true, y: false}, focus: {prox: 16}},
      focus: {alpha: 0.35},
      scales: {x: {time: true}},
      legend: {live: true},
      // Time ticks at least 80px apart: the first tick's label carries the date, and at uPlot's
      // default 50px it ran into the next tick's label whenever that one started a new minute.
      axes: [{space: 80}, {size: 70, values: (u, splits) => splits.map((v) => fmtNum(v, 3))}],
      series: [{label: 'time', value: (u, v) => (v === null || v === undefined ? '–' : isoTime(v))}].concat(result.map((s, i) => ({
        label: seriesName(s.metric),
        stroke: kPalette[i % kPalette.length],
        width: 2,
        points: {show: false},
        spanGaps: false,
        value: (u, v, si, idx) => (idx === null || raw[si][idx] === null ? '–' : raw[si][idx]),
      }))),
      hooks: {
        setSelect: [(u) => {
          if (u.select.width < 3) return;
          const a = u.posToVal(u.select.left, 'x');
          const b = u.posToVal(u.select.left + u.select.width, 'x');
          u.setSelect({left: 0, width: 0, top: 0, height: 0}, false);
          onZoom(Math.floor(a), Math.ceil(b));
        }],
      },
    };
    container.replaceChildren();
    const plot = new uPlot(opts, data, container);
    // The container, not the window: a vertical scrollbar that appears once the chart is in the page
    // (Firefox's scrollbars take layout width) narrows the container without a window resize.
    const observer = new ResizeObserver(() => {
      const w = Math.max(280, container.clientWidth);
      if (w !== plot.width) plot.setSize({width: w, height: opts.height});
    });
    observer.observe(container);
    return () => { observer.disconnect(); plot.destroy(); };
  }

  // ---- Explore -------------------------------------------------------------------------

  pages.explore = function (params) {
    const state = {
      expr: params.get('expr') || '',
      range: params.get('range') || '',
      start: params.get('start') || '',
      end: params.get('end') || '',
      step: params.get('step') || '',
      tab: params.get('tab') || 'chart',
    };
    if (!state.start || !state.end) { delete state.start; delete state.end; state.range = state.range || '1h'; }
    let destroyChart = null;
    let lastResult = null;

    const input = el('textarea', {id: 'expr', rows: 1, spellcheck: 'false', autocomplete: 'off',
      role: 'combobox', 'aria-autocomplete': 'list', 'aria-controls': 'expr-suggest', 'aria-expanded': 'false',
      'aria-describedby': 'expr-error', placeholder: 'PromQL expression, e.g. rate(cpu_usage[5m])'});
    input.value = state.expr;
    const suggest = el('ul', {id: 'expr-suggest', class: 'suggest', role: 'listbox', 'aria-label': 'Suggestions'});
    const error = el('div', {id: 'expr-error', class: 'error', role: 'alert'});
    const historySel = el('select', {id: 'history', 'aria-label': 'Query history'});
    function fillHistory() {
      historySel.replaceChildren(el('option', {value: ''}, 'History…'),
        loadHistory().map((h) => el('option', {value: h}, h.length > 80 ? h.slice(0, 77) + '…' : h)));
    }
    fillHistory();
    historySel.addEventListener('change', () => {
      if (!historySel.value) return;
      input.value = historySel.value;
      historySel.value = '';
      run(true);
    });
    const stepInput = el('input', {type: 'text', id: 'step', size: 6, placeholder: 'auto', value: state.step,
      'aria-describedby': 'step-hint'});
    const rangeBox = rangeControls(state, () => run(true));
    const runBtn = el('button', {class: 'primary', id: 'run', type: 'button', onclick: () => run(true)}, 'Run');
    const info = el('div', {class: 'hint', id: 'result-info', 'aria-live': 'polite'});
    const tabNames = {chart: 'Chart', table: 'Table', json: 'JSON'};
    const tabs = el('div', {class: 'tabs', role: 'tablist', 'aria-label': 'Result view'});
    const panels = {};
    for (const [key, name] of Object.entries(tabNames)) {
      tabs.append(el('button', {type: 'button', role: 'tab', id: 'tab-' + key, 'aria-controls': 'panel-' + key,
        onclick: () => selectTab(key, true),
        onkeydown: (ev) => {
          const keys = Object.keys(tabNames);
          const i = keys.indexOf(key);
          if (ev.key === 'ArrowRight' || ev.key === 'ArrowLeft') {
            const next = keys[(i + (ev.key === 'ArrowRight' ? 1 : keys.length - 1)) % keys.length];
            selectTab(next, true);
            $('#tab-' + next).focus();
          }
        }}, name));
      panels[key] = el('div', {role: 'tabpanel', id: 'panel-' + key, 'aria-labelledby': 'tab-' + key, tabindex: '0'});
    }
    panels.chart.classList.add('chart');
    function selectTab(key, record) {
      state.tab = key;
      for (const k of Object.keys(tabNames)) {
        const b = $('#tab-' + k, tabs);
        b.setAttribute('aria-selected', k === key ? 'true' : 'false');
        b.tabIndex = k === key ? 0 : -1;
        panels[k].hidden = k !== key;
      }
      if (record) save(false);
      if (key === 'chart' && lastResult) showChart();
    }

    main.append(el('h1', {}, 'Explore'),
      el('div', {class: 'panel'},
        el('label', {for: 'expr'}, 'Query'),
        el('div', {class: 'row'},
          el('div', {class: 'grow expr-box'}, input, suggest),
          runBtn),
        error,
        el('div', {class: 'row', style: 'margin-top:10px'},
          rangeBox,
          el('div', {}, el('label', {for: 'step'}, 'Step'), stepInput,
            el('span', {id: 'step-hint', class: 'hint'}, ' e.g. 15s, 1m; empty: auto')),
          el('div', {}, el('label', {for: 'history'}, 'History'), historySel))),
      info, tabs, panels.chart, panels.table, panels.json);
    attachAutocomplete(input, suggest, () => run(true));
    stepInput.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') run(true); });
    selectTab(state.tab in tabNames ? state.tab : 'chart', false);

    function save(push) {
      state.expr = input.value.trim();
      state.step = stepInput.value.trim();
      setRoute('explore', state, push);
    }

    function stepFor(range) {
      const explicit = parseDuration(state.step);
      if (state.step && explicit > 0) return explicit;
      const raw = (range.end - range.start) / 250;
      const nice = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
      return nice.find((n) => n >= raw) || Math.ceil(raw / 86400) * 86400;
    }

    function showChart() {
      if (destroyChart) { destroyChart(); destroyChart = null; }
      const {result, range, step} = lastResult;
      if (!result.length) {
        panels.chart.replaceChildren(el('p', {class: 'hint'}, 'No data in this range.'));
        return;
      }
      destroyChart = drawChart(panels.chart, result, range, step, (a, b) => {
        state.start = String(a);
        state.end = String(b);
        delete state.range;
        rangeBox.sync();
        run(true);
      });
    }

    let runSeq = 0;
    async function run(record) {
      save(record);
      error.textContent = '';
      input.removeAttribute('aria-invalid');
      if (!state.expr) {
        info.textContent = 'Type a PromQL expression and press Enter.';
        return;
      }
      const my = ++runSeq;
      const range = resolveRange(state);
      const step = stepFor(range);
      if (state.step && !(parseDuration(state.step) > 0)) {
        error.textContent = 'invalid step "' + state.step + '": use seconds or a duration such as 30s, 1m';
        return;
      }
      info.textContent = 'Running…';
      try {
        const res = await api('/api/v1/query_range', {query: state.expr, start: range.start, end: range.end, step});
        if (my !== runSeq) return;
        remember(state.expr);
        fillHistory();
        let result = res.data.result;
        if (res.data.resultType === 'scalar') result = [{metric: {}, values: [res.data.result]}];
        lastResult = {result, range, step, raw: res};
        const points = result.reduce((n, s) => n + s.values.length, 0);
        info.textContent = result.length + ' series, ' + fmtInt(points) + ' points, step ' +
          fmtDuration(step) + ', ' + isoTime(range.start) + ' to ' + isoTime(range.end);
        info.dataset.start = range.start;
        info.dataset.end = range.end;
        info.dataset.step = step;
        showTable(result);
        panels.json.replaceChildren(el('pre', {class: 'json', id: 'json-view'},
          JSON.stringify(JSON.parse(res.rawText), null, 2).slice(0, 2_000_000)));
        if (state.tab === 'chart') showChart();
        else panels.chart.replaceChildren();
      } catch (e) {
        if (my !== runSeq) return;
        info.textContent = '';
        error.textContent = e.message;
        input.setAttribute('aria-invalid', 'true');
        lastResult = null;
        if (destroyChart) { destroyChart(); destroyChart = null; }
        panels.chart.replaceChildren();
        panels.table.replaceChildren();
        panels.json.replaceChildren();
      }
    }

    function showTable(result) {
      const rows = result.map((s) => {
        const last = s.values[s.values.length - 1];
        return el('tr', {},
          el('td', {class: 'mono'}, seriesName(s.metric)),
          el('td', {class: 'num mono'}, last ? last[1] : '–'),
          el('td', {class: 'mono'}, last ? isoTime(last[0]) : '–'));
      });
      panels.table.replaceChildren(el('div', {class: 'scroll'}, el('table', {class: 'data', id: 'last-values'},
        el('thead', {}, el('tr', {}, el('th', {}, 'Series'), el('th', {class: 'num'}, 'Last value'), el('th', {}, 'At'))),
        el('tbody', {}, rows))));
    }

    if (state.expr) run(false);
    else info.textContent = 'Type a PromQL expression and press Enter. Tab or Enter accepts a suggestion.';
    input.focus();
    return () => { runSeq++; if (destroyChart) destroyChart(); };
  };

  // ---- Series browser ------------------------------------------------------------------

  pages.series = function (params) {
    const state = {metric: params.get('metric') || '', series: params.get('series') || '',
      filter: params.get('filter') || ''};
    const filter = el('input', {type: 'search', id: 'metric-filter', placeholder: 'Filter metrics',
      value: state.filter, 'aria-label': 'Filter metrics'});
    const list = el('ul', {class: 'list', id: 'metric-list', 'aria-label': 'Metrics'});
    const detail = el('div', {id: 'series-detail'});
    const summary = el('p', {class: 'hint', id: 'metric-summary'});
    main.append(el('h1', {}, 'Series'), summary,
      el('div', {class: 'cols'}, el('div', {}, filter, el('div', {style: 'height:6px'}), list), detail));
    let metrics = [];

    function drawList() {
      const f = filter.value.trim().toLowerCase();
      list.replaceChildren(...metrics.filter((m) => m.name.toLowerCase().includes(f)).map((m) =>
        el('li', {}, el('button', {type: 'button', 'data-metric': m.name, 'aria-current': m.name === state.metric ? 'true' : 'false',
          onclick: () => { state.metric = m.name; state.series = ''; setRoute('series', state, true); drawList(); showMetric(); }},
        el('span', {class: 'mono'}, m.name), el('span', {class: 'count'}, m.count === null ? '' : fmtInt(m.count))))));
    }
    filter.addEventListener('input', () => { state.filter = filter.value; setRoute('series', state, false); drawList(); });

    async function showMetric() {
      detail.replaceChildren();
      if (!state.metric) {
        detail.append(el('p', {class: 'hint'}, 'Choose a metric to see its series and labels.'));
        return;
      }
      try {
        const res = await api('/api/v1/series', {'match[]': state.metric});
        const series = res.data;
        const labels = new Map();
        for (const s of series) {
          for (const [k, v] of Object.entries(s)) {
            if (k === '__name__') continue;
            if (!labels.has(k)) labels.set(k, new Set());
            labels.get(k).add(v);
          }
        }
        detail.append(el('h2', {}, state.metric, ' ', el('span', {class: 'muted'}, '(' + series.length + ' series)')),
          el('div', {class: 'panel'}, el('table', {class: 'data', id: 'label-table'},
            el('thead', {}, el('tr', {}, el('th', {}, 'Label'), el('th', {class: 'num'}, 'Values'), el('th', {}, 'Examples'))),
            el('tbody', {}, [...labels.keys()].sort().map((k) => {
              const vals = [...labels.get(k)].sort();
              return el('tr', {}, el('td', {class: 'mono'}, k), el('td', {class: 'num'}, vals.length),
                el('td', {}, el('div', {class: 'chips'}, vals.slice(0, 20).map((v) => el('span', {class: 'chip mono'}, v)),
                  vals.length > 20 ? el('span', {class: 'chip'}, '+' + (vals.length - 20)) : null)));
            })))),
          el('div', {class: 'panel scroll'}, el('table', {class: 'data', id: 'series-table'},
            el('thead', {}, el('tr', {}, el('th', {}, 'Series'), el('th', {}, ''))),
            el('tbody', {}, series.map((s) => {
              const sel = seriesSelector(s);
              return el('tr', {'data-series': sel}, el('td', {class: 'mono'}, seriesName(s)),
                el('td', {}, el('button', {type: 'button', onclick: () => { state.series = sel; setRoute('series', state, true); showPoints(); }}, 'Points'), ' ',
                  el('a', {href: '#/explore?' + new URLSearchParams({expr: sel, range: '1h'})}, 'Explore'), ' ',
                  el('a', {href: '#/codec?' + new URLSearchParams({match: sel})}, 'Chunks')));
            })))),
          el('div', {id: 'points'}));
        if (state.series) showPoints();
      } catch (e) {
        detail.append(el('div', {class: 'error'}, e.message));
      }
    }

    async function showPoints() {
      const box = $('#points', detail);
      if (!box) return;
      box.replaceChildren(el('p', {class: 'hint'}, 'Loading points…'));
      try {
        const res = await fetch('/api/v1/export?' + new URLSearchParams({'match[]': state.series, format: 'json'}));
        const text = await res.text();
        if (!res.ok) throw new Error(JSON.parse(text).error || res.statusText);
        const lines = text.split('\n').filter((l) => l);
        const rows = [];
        let total = 0;
        for (const line of lines) {
          const s = JSON.parse(line);
          total += s.values.length;
          for (let i = s.values.length - 1; i >= 0 && rows.length < 1000; i--) {
            rows.push(el('tr', {}, el('td', {class: 'mono'}, isoTime(s.timestamps[i] / 1000)),
              el('td', {class: 'mono num'}, String(s.timestamps[i])), el('td', {class: 'mono num'}, String(s.values[i]))));
          }
        }
        box.replaceChildren(el('h2', {}, 'Raw points of ', el('span', {class: 'mono'}, state.series)),
          el('p', {class: 'hint', id: 'points-info', 'data-total': total},
            fmtInt(total) + ' points stored' + (total > rows.length ? '; the newest ' + rows.length + ' shown' : '') + ', newest first.'),
          el('div', {class: 'panel scroll'}, el('table', {class: 'data', id: 'points-table'},
            el('thead', {}, el('tr', {}, el('th', {}, 'Time (UTC)'), el('th', {class: 'num'}, 'Timestamp (ms)'), el('th', {class: 'num'}, 'Value'))),
            el('tbody', {}, rows))));
      } catch (e) {
        box.replaceChildren(el('div', {class: 'error'}, e.message));
      }
    }

    cache.delete('names');  // new metrics are looked for here: ask the node again
    (async () => {
      try {
        const [names, tsdb] = await Promise.all([metricNames(), api('/api/v1/status/tsdb', {limit: 10000})]);
        const counts = new Map(tsdb.data.seriesCountByMetricName.map((e) => [e.name, e.value]));
        metrics = names.map((n) => ({name: n, count: counts.has(n) ? counts.get(n) : null}));
        summary.textContent = fmtInt(metrics.length) + ' metrics, ' + fmtInt(tsdb.data.headStats.numSeries) + ' series.';
        drawList();
        showMetric();
      } catch (e) {
        summary.replaceChildren(el('span', {class: 'error'}, e.message));
      }
    })();
  };

  // ---- Status --------------------------------------------------------------------------

  // Parses the Prometheus text format into Map("name{labels}" -> number).
  function parseMetrics(text) {
    const out = new Map();
    for (const line of text.split('\n')) {
      if (!line || line[0] === '#') continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?)\s+(\S+)/.exec(line);
      if (m) out.set(m[1], Number(m[2]));
    }
    return out;
  }
  // Every sample of `name`, as [{labels, value}].
  function samples(metrics, name) {
    const out = [];
    for (const [key, value] of metrics) {
      if (key === name || key.startsWith(name + '{')) {
        const labels = {};
        const inner = key.slice(name.length + 1, -1);
        for (const m of inner.matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]] = m[2];
        out.push({key, labels, value});
      }
    }
    return out;
  }

  pages.status = function () {
    const root = el('div', {id: 'status'});
    const updated = el('p', {class: 'hint', id: 'status-updated', 'aria-live': 'off'});
    main.append(el('h1', {}, 'Status'), updated, root);
    let prev = null;
    let timer = null;
    let alive = true;

    // A card whose number comes from one /metrics sample (data-metric names it for checks).
    function card(title, metrics, key, format, sub) {
      const v = metrics.get(key);
      return el('div', {class: 'card'}, el('div', {class: 'k'}, title),
        el('div', {class: 'v', 'data-metric': key, 'data-value': v === undefined ? '' : String(v)},
          v === undefined ? '–' : (format || fmtInt)(v)),
        sub ? el('div', {class: 's'}, sub) : null);
    }
    function rate(metrics, key, dt) {
      if (!prev || !dt) return null;
      const a = prev.get(key);
      const b = metrics.get(key);
      if (a === undefined || b === undefined) return null;
      return Math.max(0, (b - a) / dt);
    }
    function rateCard(title, metrics, key, dt, unit) {
      const r = rate(metrics, key, dt);
      return el('div', {class: 'card'}, el('div', {class: 'k'}, title),
        el('div', {class: 'v', 'data-rate': key}, r === null ? '…' : fmtNum(r, r < 10 ? 2 : 0)),
        el('div', {class: 's'}, unit + ' · total ', el('span', {'data-metric': key, 'data-value': String(metrics.get(key) ?? '')},
          metrics.has(key) ? fmtInt(metrics.get(key)) : '–')));
    }
    // The sample of points accepted over one protocol ("tcp", "http" or "remote_write").
    const byProtocol = (protocol) => `ingot_points_accepted_by_protocol_total{protocol="${protocol}"}`;
    function reasonTable(id, metrics, names) {
      const rows = [];
      for (const [what, name] of names) {
        for (const s of samples(metrics, name)) {
          rows.push(el('tr', {}, el('td', {}, what), el('td', {class: 'mono'}, s.labels.reason || s.labels.kind || ''),
            el('td', {class: 'num', 'data-metric': s.key, 'data-value': String(s.value)}, fmtInt(s.value))));
        }
      }
      return el('table', {class: 'data', id},
        el('thead', {}, el('tr', {}, el('th', {}, 'What'), el('th', {}, 'Reason'), el('th', {class: 'num'}, 'Count'))),
        el('tbody', {}, rows));
    }

    let build = null;
    let config = null;
    async function refresh() {
      try {
        const res = await fetch('/metrics');
        if (!res.ok) throw new Error('/metrics: ' + res.status);
        const metrics = parseMetrics(await res.text());
        const now = performance.now() / 1000;
        if (!build) build = (await api('/api/v1/status/buildinfo')).data;
        if (!config) config = (await api('/api/v1/ingot/config')).data;
        if (!alive) return;
        const dt = prev ? now - prev.at : 0;
        const cfgRows = [];
        for (const [section, values] of Object.entries(config)) {
          for (const [k, v] of Object.entries(values)) {
            cfgRows.push(el('tr', {}, el('td', {class: 'mono'}, section + '.' + k),
              el('td', {class: 'mono', 'data-config': section + '.' + k}, JSON.stringify(v))));
          }
        }
        const hist = (name) => {
          const c = metrics.get(name + '_count');
          const s = metrics.get(name + '_sum');
          return c ? fmtNum((s / c) * 1000, 2) + ' ms average over ' + fmtInt(c) : 'none yet';
        };
        root.replaceChildren(
          el('h2', {}, 'Ingest'),
          el('div', {class: 'cards', id: 'protocol-cards'},
            rateCard('Points accepted /s over TCP (line protocol)', metrics, byProtocol('tcp'), dt, 'points/s'),
            rateCard('Points accepted /s over HTTP /write', metrics, byProtocol('http'), dt, 'points/s'),
            rateCard('Points accepted /s over remote write', metrics, byProtocol('remote_write'), dt, 'points/s'),
            rateCard('Points accepted /s (all protocols)', metrics, 'ingot_points_accepted_total', dt, 'points/s')),
          el('div', {class: 'cards', id: 'ingest-cards'},
            rateCard('Line protocol points /s (TCP and HTTP)', metrics, 'ingot_points_received_total', dt, 'points/s'),
            rateCard('Line protocol lines /s', metrics, 'ingot_lines_total', dt, 'lines/s'),
            rateCard('HTTP /write requests /s', metrics, 'ingot_http_write_requests_total', dt, 'requests/s'),
            rateCard('Remote write samples /s', metrics, 'ingot_remote_write_samples_total', dt, 'samples/s'),
            card('Open TCP connections', metrics, 'ingot_connections')),
          el('h2', {}, 'Accepted and rejected'),
          el('div', {class: 'panel'}, reasonTable('rejections', metrics, [
            ['points rejected', 'ingot_points_rejected_total'], ['lines rejected', 'ingot_lines_rejected_total'],
            ['series refused', 'ingot_series_rejected_total'], ['remote write requests rejected', 'ingot_remote_write_requests_rejected_total']])),
          el('h2', {}, 'Series and storage'),
          el('div', {class: 'cards', id: 'storage-cards'},
            card('Series', metrics, 'ingot_series'),
            card('Series with open heads', metrics, 'ingot_head_series'),
            card('Points in open heads', metrics, 'ingot_head_points'),
            card('Chunk bytes on disk', metrics, 'ingot_chunk_bytes_on_disk', fmtBytes),
            card('Chunks (estimate)', metrics, 'ingot_rocksdb_chunks_estimate'),
            card('Compression ratio', metrics, 'ingot_compression_ratio', (v) => fmtNum(v, 2) + '×', 'raw 16 B/point over sealed bytes, since start'),
            card('Series index memory', metrics, 'ingot_series_index_bytes', fmtBytes),
            card('Late series', metrics, 'ingot_late_series')),
          el('h2', {}, 'WAL and checkpoints'),
          el('div', {class: 'cards', id: 'wal-cards'},
            card('WAL bytes written', metrics, 'ingot_wal_bytes_written_total', fmtBytes),
            card('WAL fsyncs', metrics, 'ingot_wal_fsync_seconds_count', fmtInt, hist('ingot_wal_fsync_seconds')),
            card('Checkpoints', metrics, 'ingot_checkpoints_total', fmtInt, hist('ingot_checkpoint_seconds')),
            card('Definitions only in the WAL', metrics, 'ingot_series_definitions_pending'),
            card('Points replayed at start', metrics, 'ingot_wal_points_replayed_total'),
            card('Torn WAL tails', metrics, 'ingot_wal_torn_tails_total'),
            card('Corrupt WAL records', metrics, 'ingot_wal_records_corrupt_total'),
            card('Corrupt chunks', metrics, 'ingot_chunks_corrupt_total')),
          el('h2', {}, 'Build'),
          el('div', {class: 'panel'}, el('table', {class: 'data', id: 'build-info'}, el('tbody', {},
            Object.entries(build).map(([k, v]) => el('tr', {}, el('td', {}, k), el('td', {class: 'mono'}, String(v))))))),
          el('h2', {}, 'Effective configuration'),
          el('div', {class: 'panel scroll'}, el('table', {class: 'data', id: 'config'},
            el('thead', {}, el('tr', {}, el('th', {}, 'Key'), el('th', {}, 'Value'))), el('tbody', {}, cfgRows))));
        metrics.at = now;
        prev = metrics;
        updated.textContent = 'Updated ' + new Date().toLocaleTimeString() + '; refreshes every 5 s.';
        updated.dataset.refreshes = String(Number(updated.dataset.refreshes || 0) + 1);
      } catch (e) {
        root.replaceChildren(el('div', {class: 'error'}, e.message));
      }
      if (alive) timer = setTimeout(refresh, 5000);
    }
    // A second scrape soon after the first gives the rates without waiting a whole period.
    refresh().then(() => { if (alive) { clearTimeout(timer); timer = setTimeout(refresh, 1000); } });
    return () => { alive = false; clearTimeout(timer); };
  };

  // ---- Codec inspector -----------------------------------------------------------------

  pages.codec = function (params) {
    const state = {match: params.get('match') || '', range: params.get('range') || '',
      start: params.get('start') || '', end: params.get('end') || ''};
    if (!state.start || !state.end) { delete state.start; delete state.end; state.range = state.range || '30d'; }
    const input = el('textarea', {id: 'codec-match', rows: 1, spellcheck: 'false', autocomplete: 'off', role: 'combobox',
      'aria-autocomplete': 'list', 'aria-controls': 'codec-suggest', 'aria-expanded': 'false', 'aria-describedby': 'codec-error',
      placeholder: 'Series selector, e.g. cpu_usage{host="a"}'});
    input.value = state.match;
    const suggest = el('ul', {id: 'codec-suggest', class: 'suggest', role: 'listbox', 'aria-label': 'Suggestions'});
    const error = el('div', {id: 'codec-error', class: 'error', role: 'alert'});
    const rangeBox = rangeControls(state, () => load(true));
    const overall = el('div', {id: 'codec-stats'});
    const chunks = el('div', {id: 'codec-chunks'});
    main.append(el('h1', {}, 'Codec inspector'),
      el('p', {class: 'hint'}, 'How each sealed chunk was encoded: the adaptive chooser picks an encoding per chunk of up to 1024 points. Points still in the open head are not encoded yet.'),
      el('h2', {}, 'Whole node'), overall,
      el('h2', {}, 'Chunks of selected series'),
      el('div', {class: 'panel'}, el('label', {for: 'codec-match'}, 'Series'),
        el('div', {class: 'row'}, el('div', {class: 'grow expr-box'}, input, suggest),
          el('button', {type: 'button', class: 'primary', id: 'codec-run', onclick: () => load(true)}, 'Show chunks')),
        error, el('div', {class: 'row', style: 'margin-top:10px'}, rangeBox)),
      chunks);
    attachAutocomplete(input, suggest, () => load(true));

    (async () => {
      try {
        const res = await api('/api/v1/ingot/codec_stats');
        const d = res.data;
        overall.replaceChildren(el('div', {class: 'cards'},
          el('div', {class: 'card'}, el('div', {class: 'k'}, 'Sealed chunks'), el('div', {class: 'v', 'data-stat': 'chunks'}, fmtInt(d.chunks))),
          el('div', {class: 'card'}, el('div', {class: 'k'}, 'Values in chunks'), el('div', {class: 'v', 'data-stat': 'values'}, fmtInt(d.values))),
          el('div', {class: 'card'}, el('div', {class: 'k'}, 'Bytes per point'), el('div', {class: 'v'}, fmtNum(d.bytes_per_point, 2)),
            el('div', {class: 's'}, 'timestamps, values and headers')),
          el('div', {class: 'card'}, el('div', {class: 'k'}, 'Bits per value'), el('div', {class: 'v'}, fmtNum(d.bits_per_value, 2)),
            el('div', {class: 's'}, 'value blocks only'))),
          el('div', {class: 'panel scroll', style: 'margin-top:10px'}, el('table', {class: 'data', id: 'encoding-mix'},
            el('thead', {}, el('tr', {}, el('th', {}, 'Encoding'), el('th', {class: 'num'}, 'Chunks'), el('th', {class: 'num'}, 'Values'),
              el('th', {}, 'Share of values'), el('th', {class: 'num'}, 'Bits/value'), el('th', {class: 'num'}, 'Bytes/point'))),
            el('tbody', {}, d.encodings.map((e) => el('tr', {'data-encoding': e.encoding},
              el('td', {class: 'mono'}, e.encoding), el('td', {class: 'num'}, fmtInt(e.chunks)), el('td', {class: 'num'}, fmtInt(e.values)),
              el('td', {}, el('div', {class: 'bar', title: fmtNum(e.share_of_values * 100, 1) + '%'},
                el('span', {style: 'width:' + (e.share_of_values * 100).toFixed(1) + '%'})), fmtNum(e.share_of_values * 100, 1) + '%'),
              el('td', {class: 'num'}, fmtNum(e.bits_per_value, 2)), el('td', {class: 'num'}, fmtNum(e.bytes_per_point, 2))))))),
          d.truncated ? el('p', {class: 'hint'}, 'Only the first chunks were counted.') : '',
          d.chunks === 0 ? el('p', {class: 'hint'}, 'No sealed chunks yet: a series seals a chunk at 1024 points.') : '');
      } catch (e) {
        overall.replaceChildren(el('div', {class: 'error'}, e.message));
      }
    })();

    async function load(record) {
      state.match = input.value.trim();
      setRoute('codec', state, record);
      error.textContent = '';
      input.removeAttribute('aria-invalid');
      if (!state.match) {
        chunks.replaceChildren(el('p', {class: 'hint'}, 'Enter a series selector to see its chunks.'));
        return;
      }
      const range = resolveRange(state);
      try {
        const res = await api('/api/v1/ingot/chunks', {'match[]': state.match, start: range.start, end: range.end});
        const d = res.data;
        if (!d.series.length) {
          chunks.replaceChildren(el('p', {class: 'hint'}, 'No series match.'));
          return;
        }
        chunks.replaceChildren(...d.series.map((s) => {
          const name = seriesName(s.metric);
          const total = s.chunks.reduce((a, c) => a + c.bytes, 0);
          const pts = s.chunks.reduce((a, c) => a + (c.count || 0), 0);
          return el('section', {class: 'panel', 'data-series': name},
            el('h2', {class: 'mono', style: 'margin-top:0'}, name),
            el('p', {class: 'hint'}, s.type + ' · ' + plural(s.chunks.length, 'chunk') + ', ' + fmtInt(pts) + ' points in ' + fmtBytes(total) +
              (pts ? ' (' + fmtNum(total / pts, 2) + ' bytes/point)' : '') + ' · ' + fmtInt(s.head_points) + ' points in the open head'),
            el('div', {class: 'scroll'}, el('table', {class: 'data chunk-table'},
              el('thead', {}, el('tr', {}, el('th', {}, 'First point (UTC)'), el('th', {class: 'hide-narrow'}, 'Last point'),
                el('th', {class: 'num'}, 'Points'), el('th', {class: 'num'}, 'Bytes'), el('th', {class: 'num hide-narrow'}, 'Time bytes'),
                el('th', {class: 'num'}, 'Value bytes'), el('th', {}, 'Encoding'), el('th', {class: 'num'}, 'Bits/value'),
                el('th', {class: 'num'}, 'ALP e/f'), el('th', {class: 'num'}, 'Exceptions'), el('th', {class: 'num hide-narrow'}, 'Bit width'))),
              el('tbody', {}, s.chunks.map((c) => el('tr', {'data-first-ts-ns': c.first_ts_ns},
                el('td', {class: 'mono'}, c.min_time !== undefined ? isoTime(c.min_time) : '–'),
                el('td', {class: 'mono hide-narrow'}, c.max_time !== undefined ? isoTime(c.max_time) : '–'),
                el('td', {class: 'num', 'data-field': 'count'}, c.count ?? '–'),
                el('td', {class: 'num', 'data-field': 'bytes'}, c.bytes),
                el('td', {class: 'num hide-narrow', 'data-field': 'ts_bytes'}, c.ts_bytes ?? '–'),
                el('td', {class: 'num', 'data-field': 'value_bytes'}, c.value_bytes ?? '–'),
                el('td', {class: 'mono', 'data-field': 'value_encoding'}, c.ok ? c.value_encoding : el('span', {class: 'error'}, c.error)),
                el('td', {class: 'num'}, c.bits_per_value !== undefined ? fmtNum(c.bits_per_value, 2) : '–'),
                el('td', {class: 'num', 'data-field': 'alp'}, c.alp_exponent === null || c.alp_exponent === undefined ? '–' : c.alp_exponent + '/' + c.alp_factor),
                el('td', {class: 'num', 'data-field': 'exception_count'}, c.exception_count ?? '–'),
                el('td', {class: 'num hide-narrow'}, c.bit_width ?? '–')))))));
        }), d.truncated ? el('p', {class: 'hint'}, 'More series match; only the first are shown.') : '');
      } catch (e) {
        error.textContent = e.message;
        input.setAttribute('aria-invalid', 'true');
        chunks.replaceChildren();
      }
    }
    load(false);
  };

  // ---- start ---------------------------------------------------------------------------

  api('/api/v1/status/buildinfo').then((b) => { $('#version').textContent = 'ingotd ' + (b.data.ingotVersion || b.data.version); }).catch(() => {});
  render();
})();
