// The web UI in a real browser against the real ingotd, with data written as line protocol over
// its TCP listener and over HTTP /write. The browser is Debian's headless Chromium (driven over
// the DevTools protocol) or Firefox ESR (driven over WebDriver BiDi), both by puppeteer-core; the
// same checks run in each.
//
//   node tests/ui/ui_browser_test.mjs --ingotd build/node/ingotd --modules ui/node_modules \
//        --out build/ui-screenshots/chromium [--browser chromium|firefox] [--executable PATH]
//
// Each page is checked against the node's own answers: Explore's lines, legend and hover values
// against /api/v1/query_range, the series browser against what was written, the status page
// against /metrics, the codec inspector against /api/v1/ingot/chunks and /codec_stats (which
// tests/node/codec_routes_test.cc checks against the stored chunks). Screenshots of every page
// go to --out. Waits are conditions with a hang guard, never timed assertions.
import assert from 'node:assert/strict';
import {spawn} from 'node:child_process';
import fs from 'node:fs';
import {createRequire} from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {after, before, test} from 'node:test';

function arg(name, fallback) {
  const i = process.argv.indexOf('--' + name);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  if (fallback !== undefined) return fallback;
  throw new Error('missing --' + name);
}
const ingotdPath = path.resolve(arg('ingotd'));
const modulesDir = path.resolve(arg('modules'));
const outDir = path.resolve(arg('out'));
const browserName = arg('browser', 'chromium');
const kBrowsers = {
  chromium: {path: '/usr/bin/chromium', fix: 'run ./dev deps (Debian package chromium)'},
  firefox: {path: '/usr/bin/firefox-esr', fix: 'run ./dev deps (Debian package firefox-esr)'},
};
if (!kBrowsers[browserName]) {
  console.error(`--browser must be one of ${Object.keys(kBrowsers).join(', ')}, not ${browserName}`);
  process.exit(1);
}
const browserPath = arg('executable', kBrowsers[browserName].path);

for (const [what, p, fix] of [['ingotd', ingotdPath, 'build it'],
  [browserName, browserPath, kBrowsers[browserName].fix],
  ['puppeteer-core', path.join(modulesDir, 'puppeteer-core'), 'run ./dev deps (npm ci in ui/)']]) {
  if (!fs.existsSync(p)) {
    console.error(`${what} is missing at ${p}: ${fix}`);
    process.exit(1);
  }
}
const puppeteer = createRequire(modulesDir + '/')('puppeteer-core');

const kHosts = ['a', 'b', 'c'];
const kPoints = 1200;  // per float series: one sealed chunk (1024) and an open head
const kIntPoints = 1100;
const now = Math.floor(Date.now() / 1000);
const t0 = now - 1500;  // inside the last hour: every preset from 1h on shows all points

// Everything in the browser runs against this node only; the machine may have no network at all,
// so Firefox's own background traffic (updates, telemetry, captive-portal and connectivity probes,
// safe-browsing lists, remote settings, push) is switched off on top of puppeteer's defaults.
const kFirefoxPrefs = {
  'app.update.auto': false,
  'app.update.enabled': false,
  'app.update.staging.enabled': false,
  'app.normandy.enabled': false,
  'app.shield.optoutstudies.enabled': false,
  'browser.discovery.enabled': false,
  'browser.newtabpage.activity-stream.feeds.telemetry': false,
  'browser.newtabpage.activity-stream.telemetry': false,
  'browser.ping-centre.telemetry': false,
  'browser.region.network.url': '',
  'browser.region.update.enabled': false,
  'browser.safebrowsing.provider.google.updateURL': '',
  'browser.safebrowsing.provider.google4.updateURL': '',
  'browser.safebrowsing.provider.mozilla.updateURL': '',
  'browser.safebrowsing.update.enabled': false,
  'datareporting.healthreport.uploadEnabled': false,
  'datareporting.policy.dataSubmissionEnabled': false,
  'dom.push.connection.enabled': false,
  'extensions.blocklist.enabled': false,
  'extensions.getAddons.cache.enabled': false,
  'media.gmp-gmpopenh264.enabled': false,
  'messaging-system.rsexperimentloader.enabled': false,
  'network.captive-portal-service.enabled': false,
  'network.connectivity-service.enabled': false,
  'network.dns.disablePrefetch': true,
  'network.prefetch-next': false,
  'network.trr.mode': 5,
  'services.settings.server': 'http://127.0.0.1:9/',
  'toolkit.telemetry.archive.enabled': false,
  'toolkit.telemetry.enabled': false,
  'toolkit.telemetry.server': '',
  'toolkit.telemetry.unified': false,
  'toolkit.telemetry.updatePing.enabled': false,
};

let profileDir = null;

// The browser's own output goes to this test's output (shown by ctest when the test fails), so a
// browser that does not come up says why. A first start on a fresh machine can be slow (font and
// profile caches), hence the generous bound and one retry with a new profile.
function launchOnce() {
  if (profileDir) fs.rmSync(profileDir, {recursive: true, force: true});
  const userDataDir = profileDir = fs.mkdtempSync(path.join(os.tmpdir(), `ingot-ui-${browserName}-`));
  const common = {executablePath: browserPath, headless: true, userDataDir, timeout: 120000, dumpio: true,
    env: {...process.env, HOME: userDataDir, DBUS_SESSION_BUS_ADDRESS: 'disabled:'}};
  if (browserName === 'firefox') {
    return puppeteer.launch({...common, browser: 'firefox', extraPrefsFirefox: kFirefoxPrefs});
  }
  return puppeteer.launch({...common,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage'],
  });
}

async function launchBrowser() {
  const started = Date.now();
  try {
    return await launchOnce();
  } catch (e) {
    console.log(`# ${browserName} did not start after ${Date.now() - started} ms (${e.message}); one more try`);
    return launchOnce();
  }
}

let node = null;
let dataDir = null;
let httpPort = 0;
let tcpPort = 0;
let browser = null;
let base = '';
const written = new Map();  // series selector -> [[ts_s, value string]]

function startNode() {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ingot-ui-test-'));
  node = spawn(ingotdPath, ['--data-dir', path.join(dataDir, 'data'),
    '--set', 'query.http_listen=127.0.0.1:0', '--set', 'ingest.tcp_listen=127.0.0.1:0',
    '--set', 'log.level=info'], {stdio: ['ignore', 'ignore', 'pipe']});
  let log = '';
  return new Promise((resolve, reject) => {
    node.stderr.on('data', (chunk) => {
      log += chunk;
      const m = /ready: line protocol on tcp port (\d+), HTTP on port (\d+)/.exec(log);
      if (m && !httpPort) {
        tcpPort = Number(m[1]);
        httpPort = Number(m[2]);
        resolve();
      }
    });
    node.on('exit', (code) => reject(new Error('ingotd exited with ' + code + ':\n' + log)));
  });
}

function sendLines(lines) {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({host: '127.0.0.1', port: tcpPort}, () => {
      socket.end(lines.join('\n') + '\n');
    });
    socket.on('close', resolve);
    socket.on('error', reject);
  });
}

async function getJson(target) {
  const res = await fetch(base + target);
  const body = await res.json();
  return {status: res.status, body};
}

// Repeats `fn` until it returns a truthy value; the bound only keeps a broken node from hanging
// the suite (it is not a timing requirement).
async function eventually(fn, what) {
  for (let i = 0; i < 400; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('gave up waiting for ' + what);
}

async function newPage(width = 1280, height = 800) {
  const page = await browser.newPage();
  await page.setViewport({width, height});
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Error answers of the API show up as failed loads: those are checked where they are expected.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
  });
  page.errors = errors;
  return page;
}
const shot = (page, name) => page.screenshot({path: path.join(outDir, name + '.png'), fullPage: true});

before(async () => {
  fs.mkdirSync(outDir, {recursive: true});
  await startNode();
  base = `http://127.0.0.1:${httpPort}`;
  // Random-walk gauges with two decimals (ALP territory) and an integer counter.
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const lines = [];
  for (const host of kHosts) {
    let v = 40 + 10 * kHosts.indexOf(host);
    const points = [];
    for (let i = 0; i < kPoints; i++) {
      v = Math.round((v + random() - 0.5) * 100) / 100;
      const ts = t0 + i;
      lines.push(`ui_cpu,host=${host},dc=west usage=${v} ${ts}000000000`);
      points.push([ts, String(v)]);
    }
    written.set(`ui_cpu_usage{dc="west",host="${host}"}`, points);
  }
  await sendLines(lines);
  // The counter goes over HTTP /write, so that the status page has two protocols to tell apart.
  const counter = [];
  const body = [];
  for (let i = 0; i < kIntPoints; i++) {
    body.push(`ui_req,path=/api count=${i * 7}i ${t0 + i}`);
    counter.push([t0 + i, String(i * 7)]);
  }
  written.set('ui_req_count{path="/api"}', counter);
  const res = await fetch(`${base}/write?precision=s`, {method: 'POST', body: body.join('\n')});
  assert.equal(res.status, 204, await res.text());
  const total = kHosts.length * kPoints + kIntPoints;
  await eventually(async () => {
    const m = /^ingot_points_accepted_total (\d+)/m.exec(await (await fetch(base + '/metrics')).text());
    return m && Number(m[1]) === total;
  }, 'the node to accept every point');
  browser = await launchBrowser();
  console.log(`browser: ${await browser.version()} (${browserPath})`);
});

after(async () => {
  if (browser) await browser.close();
  if (node && node.exitCode === null) {
    node.removeAllListeners('exit');
    const exited = new Promise((r) => node.on('exit', r));
    node.kill('SIGTERM');
    await exited;
  }
  if (dataDir) fs.rmSync(dataDir, {recursive: true, force: true});
  if (profileDir) fs.rmSync(profileDir, {recursive: true, force: true});
});

// Colours of the chart's lines found on its canvas, out of `colors` ("#rrggbb").
async function colorsOnCanvas(page, colors) {
  return page.evaluate((colors) => {
    const canvas = document.querySelector('#panel-chart canvas');
    const ctx = canvas.getContext('2d');
    const px = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    const wanted = new Map(colors.map((c) => [parseInt(c.slice(1), 16), c]));
    const found = new Set();
    for (let i = 0; i < px.length; i += 4) {
      if (px[i + 3] !== 255) continue;
      const c = wanted.get((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
      if (c) found.add(c);
    }
    return [...found].sort();
  }, colors);
}

const legendLabels = (page) => page.$$eval('#panel-chart .u-legend .u-series:not(:first-child) .u-label',
  (els) => els.map((e) => e.textContent));

async function openExplore(page, query) {
  await page.goto(`${base}/ui/#/explore?${new URLSearchParams(query)}`);
  await page.waitForFunction(() => document.querySelector('#panel-chart canvas') ||
    document.querySelector('#expr-error').textContent);
}

test('/ redirects to the UI, which loads without errors', async () => {
  const res = await fetch(base + '/', {redirect: 'manual'});
  assert.equal(res.status, 302);
  assert.equal(res.headers.get('location'), '/ui/');
  const page = await newPage();
  await page.goto(base + '/');
  assert.equal(new URL(page.url()).pathname, '/ui/');
  await page.waitForFunction(() => document.querySelector('#version').textContent.startsWith('ingotd'));
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('Explore draws one line per written series, named in the legend', async () => {
  const page = await newPage();
  await openExplore(page, {expr: 'ui_cpu_usage', range: '1h', step: '15s'});
  const labels = await legendLabels(page);
  assert.deepEqual(labels.sort(), kHosts.map((h) => `ui_cpu_usage{dc="west", host="${h}"}`));
  const strokes = await page.$$eval('#panel-chart .u-legend .u-series:not(:first-child) .u-marker',
    (els) => els.map((e) => getComputedStyle(e).borderColor));
  const hex = strokes.map((rgb) => '#' + rgb.match(/\d+/g).slice(0, 3)
    .map((n) => Number(n).toString(16).padStart(2, '0')).join(''));
  assert.equal(new Set(hex).size, 3, 'three distinct line colours: ' + hex);
  // Every series' colour is drawn; a palette colour of no series is not (the scan is real).
  const unused = '#e7298a';
  assert.ok(!hex.includes(unused));
  assert.deepEqual(await colorsOnCanvas(page, [...hex, unused]), [...hex].sort());
  await shot(page, 'explore');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('Explore hover shows the values the API returns', async () => {
  const page = await newPage();
  await openExplore(page, {expr: 'ui_cpu_usage{host=~"a|b"}', start: String(t0), end: String(t0 + 600), step: '10'});
  const box = await (await page.$('#panel-chart .u-over')).boundingBox();
  await page.mouse.move(box.x + box.width * 0.37, box.y + box.height / 2);
  const legend = await page.$$eval('#panel-chart .u-legend .u-series', (rows) => rows.map((r) => ({
    label: r.querySelector('.u-label').textContent, value: r.querySelector('.u-value').textContent})));
  const time = Date.parse(legend[0].value) / 1000;
  assert.ok(Number.isFinite(time), 'hovered time: ' + legend[0].value);
  const api = await getJson(`/api/v1/query_range?${new URLSearchParams({
    query: 'ui_cpu_usage{host=~"a|b"}', start: t0, end: t0 + 600, step: 10})}`);
  assert.equal(api.status, 200);
  assert.equal(api.body.data.result.length, 2);
  for (const s of api.body.data.result) {
    const row = legend.find((l) => l.label === `ui_cpu_usage{dc="west", host="${s.metric.host}"}`);
    const point = s.values.find(([t]) => t === time);
    assert.ok(row && point, 'a legend row and an API point at ' + time);
    assert.equal(row.value, point[1]);
    // ... and what was written at that second (the instant selector's newest sample).
    const w = written.get(`ui_cpu_usage{dc="west",host="${s.metric.host}"}`).find(([t]) => t === time);
    assert.equal(Number(row.value), Number(w[1]));
  }
  await shot(page, 'explore-hover');
  await page.close();
});

test('Explore shows a bad query\'s error where it was typed', async () => {
  const page = await newPage();
  await page.goto(`${base}/ui/#/explore`);
  await page.waitForSelector('#expr');
  await page.type('#expr', 'sum(rate(ui_cpu_usage[5m])');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#expr-error').textContent);
  const shown = await page.$eval('#expr-error', (e) => e.textContent);
  const api = await getJson(`/api/v1/query_range?${new URLSearchParams({
    query: 'sum(rate(ui_cpu_usage[5m])', start: now - 3600, end: now, step: 15})}`);
  assert.equal(api.status, 400);
  assert.equal(shown, api.body.error);
  assert.equal(await page.$eval('#expr', (e) => e.getAttribute('aria-invalid')), 'true');
  // The error sits right under the input and is announced.
  assert.equal(await page.$eval('#expr', (e) => e.getAttribute('aria-describedby')), 'expr-error');
  assert.equal(await page.$eval('#expr-error', (e) => e.getAttribute('role')), 'alert');
  await shot(page, 'explore-error');
  await page.close();
});

test('Explore autocompletes metric names, label names and values from the API', async () => {
  const page = await newPage();
  await page.goto(`${base}/ui/#/explore`);
  await page.waitForSelector('#expr');
  await page.type('#expr', 'ui_c');
  await page.waitForFunction(() => !document.querySelector('#expr-suggest').hidden);
  const names = await page.$$eval('#expr-suggest li span', (e) => e.map((x) => x.textContent));
  assert.deepEqual(names, ['ui_cpu_usage']);
  await page.keyboard.press('Tab');
  assert.equal(await page.$eval('#expr', (e) => e.value), 'ui_cpu_usage');
  await page.type('#expr', '{');
  await page.waitForFunction(() => !document.querySelector('#expr-suggest').hidden);
  assert.deepEqual(await page.$$eval('#expr-suggest li span', (e) => e.map((x) => x.textContent)), ['dc', 'host']);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  assert.equal(await page.$eval('#expr', (e) => e.value), 'ui_cpu_usage{host="');
  await page.waitForFunction(() => !document.querySelector('#expr-suggest').hidden);
  assert.deepEqual(await page.$$eval('#expr-suggest li span', (e) => e.map((x) => x.textContent)), kHosts);
  await shot(page, 'explore-autocomplete');
  await page.keyboard.press('Tab');
  assert.equal(await page.$eval('#expr', (e) => e.value), 'ui_cpu_usage{host="a"');
  await page.close();
});

test('The URL round-trips Explore\'s state', async () => {
  const page = await newPage();
  await page.goto(`${base}/ui/#/explore`);
  await page.waitForSelector('#expr');
  await page.type('#expr', 'ui_req_count');
  await page.keyboard.press('Escape');
  await page.select('#range', '3h');
  await page.$eval('#step', (e) => { e.value = ''; });
  await page.type('#step', '30s');
  await page.click('#tab-table');
  await page.click('#run');
  await page.waitForSelector('#last-values tbody tr');
  const url = new URL(page.url());
  const state = new URLSearchParams(url.hash.slice(url.hash.indexOf('?') + 1));
  assert.equal(state.get('expr'), 'ui_req_count');
  assert.equal(state.get('range'), '3h');
  assert.equal(state.get('step'), '30s');
  assert.equal(state.get('tab'), 'table');

  const again = await newPage();
  await again.goto(url.href);
  await again.waitForSelector('#last-values tbody tr');
  assert.equal(await again.$eval('#expr', (e) => e.value), 'ui_req_count');
  assert.equal(await again.$eval('#range', (e) => e.value), '3h');
  assert.equal(await again.$eval('#step', (e) => e.value), '30s');
  assert.equal(await again.$eval('#tab-table', (e) => e.getAttribute('aria-selected')), 'true');
  assert.equal(await again.$eval('#panel-chart', (e) => e.hidden), true);
  const rows = await again.$$eval('#last-values tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.equal(rows.length, 1);
  assert.equal(rows[0][0], 'ui_req_count{path="/api"}');
  assert.equal(rows[0][1], String((kIntPoints - 1) * 7));  // the last written value
  await shot(again, 'explore-table');

  // Drag-zoom on the chart becomes an absolute range in the URL, which reloads as a custom range.
  await again.click('#tab-chart');
  await again.waitForSelector('#panel-chart canvas');
  const box = await (await again.$('#panel-chart .u-over')).boundingBox();
  // The data is in the last 25 minutes of the 3 hours: select the last tenth.
  await again.mouse.move(box.x + box.width * 0.9, box.y + 20);
  await again.mouse.down();
  await again.mouse.move(box.x + box.width * 0.99, box.y + 40, {steps: 5});
  await again.mouse.up();
  await again.waitForFunction(() => location.hash.includes('start='));
  const zoomed = new URL(again.url());
  const z = new URLSearchParams(zoomed.hash.slice(zoomed.hash.indexOf('?') + 1));
  assert.ok(Number(z.get('end')) > Number(z.get('start')));
  assert.equal(z.get('range'), null);
  const third = await newPage();
  await third.goto(zoomed.href);
  await third.waitForSelector('#panel-chart canvas');
  assert.equal(await third.$eval('#range', (e) => e.value), 'custom');
  assert.equal(await third.$eval('#result-info', (e) => e.dataset.start), z.get('start'));
  assert.equal(await third.$eval('#result-info', (e) => e.dataset.end), z.get('end'));
  await Promise.all([page.close(), again.close(), third.close()]);
});

test('The series browser lists exactly the written series and their raw points', async () => {
  const page = await newPage();
  await page.goto(`${base}/ui/#/series`);
  await page.waitForSelector('#metric-list li');
  const metrics = await page.$$eval('#metric-list button', (bs) => bs.map((b) =>
    [b.dataset.metric, b.querySelector('.count').textContent]));
  assert.deepEqual(metrics, [['ui_cpu_usage', '3'], ['ui_req_count', '1']]);
  await page.click('#metric-list button[data-metric="ui_cpu_usage"]');
  await page.waitForSelector('#series-table tbody tr');
  const series = await page.$$eval('#series-table tbody tr', (trs) => trs.map((tr) => tr.dataset.series));
  assert.deepEqual(series.sort(), [...written.keys()].filter((k) => k.startsWith('ui_cpu')).sort());
  const labels = await page.$$eval('#label-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].slice(0, 2).map((c) => c.textContent)));
  assert.deepEqual(labels, [['dc', '1'], ['host', '3']]);
  assert.match(page.url(), /#\/series\?metric=ui_cpu_usage/);
  const target = 'ui_cpu_usage{dc="west",host="b"}';
  await page.click(`#series-table tr[data-series='${target}'] button`);
  await page.waitForSelector('#points-table tbody tr');
  assert.equal(await page.$eval('#points-info', (e) => e.dataset.total), String(kPoints));
  const first = await page.$eval('#points-table tbody tr', (tr) => [...tr.cells].map((c) => c.textContent));
  const last = written.get(target)[kPoints - 1];
  assert.equal(first[1], String(last[0] * 1000));
  assert.equal(Number(first[2]), Number(last[1]));
  await shot(page, 'series');
  // The drill-down is in the URL too.
  const again = await newPage();
  await again.goto(page.url());
  await again.waitForSelector('#points-table tbody tr');
  assert.equal(await again.$eval('#points-info', (e) => e.dataset.total), String(kPoints));
  assert.deepEqual(page.errors, []);
  await Promise.all([page.close(), again.close()]);
});

test('The status page shows the numbers /metrics has', async () => {
  const page = await newPage();
  await page.goto(`${base}/ui/#/status`);
  await page.waitForSelector('#storage-cards [data-metric]');
  const shown = await page.$$eval('[data-metric]', (els) => els.map((e) => [e.dataset.metric, e.dataset.value, e.textContent]));
  const text = await (await fetch(base + '/metrics')).text();
  const metrics = new Map();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) metrics.set(m[1], m[2]);
  }
  const keys = new Set(shown.map(([k]) => k));
  const byProtocol = (p) => `ingot_points_accepted_by_protocol_total{protocol="${p}"}`;
  for (const must of ['ingot_points_accepted_total', byProtocol('tcp'), byProtocol('http'), byProtocol('remote_write'),
    'ingot_series', 'ingot_head_points', 'ingot_chunk_bytes_on_disk',
    'ingot_wal_bytes_written_total', 'ingot_checkpoints_total', 'ingot_points_received_total',
    'ingot_points_rejected_total{reason="too_old"}', 'ingot_lines_rejected_total{reason="malformed"}']) {
    assert.ok(keys.has(must), 'the page shows ' + must);
  }
  for (const [key, value] of shown) {
    if (!metrics.has(key)) continue;  // a gauge the node does not report (shown as "–")
    assert.equal(Number(value), Number(metrics.get(key)), key);
  }
  const byKey = new Map(shown.map(([k, v, t]) => [k, t]));
  assert.equal(byKey.get('ingot_points_accepted_total'), (kHosts.length * kPoints + kIntPoints).toLocaleString('en-US'));
  assert.equal(byKey.get('ingot_series'), '4');
  // Per protocol: the gauges over TCP, the counter over HTTP, nothing over remote write.
  assert.equal(byKey.get(byProtocol('tcp')), (kHosts.length * kPoints).toLocaleString('en-US'));
  assert.equal(byKey.get(byProtocol('http')), kIntPoints.toLocaleString('en-US'));
  assert.equal(byKey.get(byProtocol('remote_write')), '0');
  // Each protocol has its rate, a number once a second scrape gave two samples to divide.
  await page.waitForFunction(() => Number(document.querySelector('#status-updated').dataset.refreshes) >= 2);
  for (const p of ['tcp', 'http', 'remote_write']) {
    const r = await page.$eval(`[data-rate='${byProtocol(p)}']`, (e) => e.textContent);
    assert.match(r, /^\d[\d,]*(\.\d+)?$/, `${p} rate: ${r}`);
  }
  // Build info and the effective configuration.
  const build = (await getJson('/api/v1/status/buildinfo')).body.data;
  const buildText = await page.$eval('#build-info', (e) => e.textContent);
  assert.ok(buildText.includes(build.version));
  assert.equal(await page.$eval('[data-config="query.http_listen"]', (e) => e.textContent), '"127.0.0.1:0"');
  assert.equal(await page.$eval('[data-config="storage.data_dir"]', (e) => e.textContent),
    JSON.stringify(path.join(dataDir, 'data')));
  await shot(page, 'status');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('The codec inspector shows the chunks and encodings the storage reports', async () => {
  const page = await newPage();
  await page.goto(`${base}/ui/#/codec?${new URLSearchParams({match: '{__name__=~"ui_.*"}', range: '1d'})}`);
  await page.waitForSelector('.chunk-table tbody tr');
  await page.waitForSelector('#encoding-mix tbody tr');
  const api = await getJson(`/api/v1/ingot/chunks?${new URLSearchParams({'match[]': '{__name__=~"ui_.*"}', start: now - 86400, end: now + 60})}`);
  assert.equal(api.status, 200);
  const sections = await page.$$eval('section[data-series]', (ss) => ss.map((s) => ({
    name: s.dataset.series,
    rows: [...s.querySelectorAll('.chunk-table tbody tr')].map((tr) => Object.fromEntries(
      [...tr.querySelectorAll('[data-field]')].map((td) => [td.dataset.field, td.textContent]))),
  })));
  assert.equal(sections.length, 4);
  let chunks = 0;
  for (const s of api.body.data.series) {
    const name = s.metric.__name__ + '{' + Object.keys(s.metric).filter((k) => k !== '__name__').sort()
      .map((k) => `${k}=${JSON.stringify(s.metric[k])}`).join(', ') + '}';
    const shown = sections.find((x) => x.name === name);
    assert.ok(shown, 'a section for ' + name);
    assert.equal(shown.rows.length, s.chunks.length);
    assert.equal(s.chunks.length, 1);  // 1200 or 1100 points: one sealed chunk of 1024
    s.chunks.forEach((c, i) => {
      const row = shown.rows[i];
      assert.equal(row.count, String(c.count));
      assert.equal(c.count, 1024);
      assert.equal(row.bytes, String(c.bytes));
      assert.equal(row.value_bytes, String(c.value_bytes));
      assert.equal(row.ts_bytes, String(c.ts_bytes));
      assert.equal(row.value_encoding, c.value_encoding);
      assert.equal(row.exception_count, String(c.exception_count));
      assert.equal(row.alp, c.alp_exponent === null ? '–' : `${c.alp_exponent}/${c.alp_factor}`);
      chunks++;
    });
  }
  const stats = (await getJson('/api/v1/ingot/codec_stats')).body.data;
  assert.equal(stats.chunks, chunks);
  const mix = await page.$$eval('#encoding-mix tbody tr', (trs) => trs.map((tr) =>
    [tr.dataset.encoding, tr.cells[1].textContent, tr.cells[2].textContent]));
  assert.deepEqual(mix, stats.encodings.map((e) => [e.encoding, String(e.chunks), e.values.toLocaleString('en-US')]));
  assert.ok(mix.some(([e]) => e === 'int'));
  await shot(page, 'codec');
  // A bad selector is shown under the input.
  await page.$eval('#codec-match', (e) => { e.value = 'ui_cpu_usage{'; });
  await page.click('#codec-run');
  await page.waitForFunction(() => document.querySelector('#codec-error').textContent);
  assert.match(await page.$eval('#codec-error', (e) => e.textContent), /invalid parameter "match\[\]"/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('Pages fit a phone screen and are keyboard reachable', async () => {
  const page = await newPage(390, 844);
  for (const [name, hash] of [['explore', '#/explore?expr=ui_cpu_usage&range=1h'], ['series', '#/series?metric=ui_cpu_usage'],
    ['status', '#/status'], ['codec', '#/codec?match=ui_cpu_usage%7Bhost%3D%22a%22%7D&range=1d']]) {
    await page.goto(`${base}/ui/${hash}`);
    await page.waitForSelector({explore: '#panel-chart canvas', series: '#series-table', status: '#storage-cards',
      codec: '.chunk-table'}[name]);
    // Layout width, without a classic scrollbar (Firefox's take 12px of it); measured after two
    // frames, so that the chart has followed its container.
    const overflow = await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() =>
      requestAnimationFrame(() => resolve(document.documentElement.scrollWidth - document.documentElement.clientWidth)))));
    assert.ok(overflow <= 0, `${name} is ${overflow}px wider than the phone`);
    await shot(page, 'phone-' + name);
  }
  await page.close();
  // Keyboard: in a freshly loaded page the first Tab reaches the skip link, the next ones the
  // navigation; Enter on a link opens its page.
  const fresh = await newPage();
  await fresh.goto(`${base}/ui/#/status`);
  await fresh.waitForSelector('#storage-cards');
  await fresh.keyboard.press('Tab');
  assert.equal(await fresh.evaluate(() => document.activeElement.id), 'skip');
  const focused = [];
  for (let i = 0; i < 5; i++) {
    await fresh.keyboard.press('Tab');
    focused.push(await fresh.evaluate(() => document.activeElement.textContent.trim()));
  }
  assert.deepEqual(focused.slice(1), ['Explore', 'Series', 'Status', 'Codec']);
  await fresh.keyboard.press('Enter');  // on "Codec"
  await fresh.waitForSelector('#codec-match');
  assert.equal(await fresh.$eval('nav a[aria-current="page"]', (e) => e.textContent), 'Codec');
  await fresh.close();
});
