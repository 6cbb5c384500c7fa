// The HTML report as a person sees it, in headless Chromium driven over the DevTools protocol
// on a pipe (--remote-debugging-pipe: no port, no network, no npm package):
//   node html_test.js CHROMIUM REPORT.html EXPECT.json WORKDIR [keep]
// (keep: also write screenshots of the verdict, the tables and the page, and the page as an A4 PDF)
// EXPECT.json: {groups, workloads, log_group, colours: {group id: distinct bar colours}}.
// Prints one line per failed check and a summary; exit 0 only when every check passed.
'use strict';
const {spawn} = require('child_process');
const fs = require('fs');
const zlib = require('zlib');

const [chrome, report, expectFile, work, keep] = process.argv.slice(2);
const expect = JSON.parse(fs.readFileSync(expectFile, 'utf8'));
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f',
  '#bab0ac'];

let pass = 0, fail = 0;
function check(name, ok, detail) {
  if (ok) pass++;
  else {
    fail++;
    console.log('FAIL: ' + name + (detail === undefined ? '' : ': ' + JSON.stringify(detail)));
  }
}

const args = ['--headless', '--disable-gpu', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-extensions', '--force-color-profile=srgb',
  '--hide-scrollbars', '--remote-debugging-pipe', '--user-data-dir=' + work + '/profile', 'about:blank'];
if (process.getuid && process.getuid() === 0) args.unshift('--no-sandbox');
const proc = spawn(chrome, args, {stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe']});
const toChrome = proc.stdio[3], fromChrome = proc.stdio[4];
const killer = setTimeout(() => {
  console.log('FAIL: Chromium did not answer within 60 s');
  proc.kill('SIGKILL');
  process.exit(1);
}, 60000);

let nextId = 1, buffered = '';
const waiting = new Map(), listeners = [];
fromChrome.on('data', (chunk) => {
  buffered += chunk.toString('utf8');
  let at;
  while ((at = buffered.indexOf('\0')) >= 0) {
    const msg = JSON.parse(buffered.slice(0, at));
    buffered = buffered.slice(at + 1);
    if (msg.id && waiting.has(msg.id)) {
      const {resolve, reject} = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (msg.error) reject(new Error(msg.error.message));
      else resolve(msg.result);
    } else if (msg.method) {
      for (const l of listeners.slice()) l(msg);
    }
  }
});
function send(method, params, sessionId) {
  const id = nextId++;
  const msg = {id, method, params: params || {}};
  if (sessionId) msg.sessionId = sessionId;
  toChrome.write(JSON.stringify(msg) + '\0');
  return new Promise((resolve, reject) => waiting.set(id, {resolve, reject}));
}
function once(method) {
  return new Promise((resolve) => {
    const l = (msg) => {
      if (msg.method === method) {
        listeners.splice(listeners.indexOf(l), 1);
        resolve(msg.params);
      }
    };
    listeners.push(l);
  });
}

// PNG (8-bit RGB or RGBA, not interlaced) to {width, height, channels, pixels}.
function decodePng(buf) {
  let pos = 8, width = 0, height = 0, type = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), kind = buf.toString('ascii', pos + 4, pos + 8);
    if (kind === 'IHDR') {
      width = buf.readUInt32BE(pos + 8), height = buf.readUInt32BE(pos + 12), type = buf[pos + 17];
      if (buf[pos + 16] !== 8 || (type !== 2 && type !== 6) || buf[pos + 20] !== 0) throw new Error('unexpected PNG format');
    }
    if (kind === 'IDAT') idat.push(buf.subarray(pos + 8, pos + 8 + len));
    pos += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const ch = type === 6 ? 4 : 3, stride = width * ch, out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const o = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= ch ? out[o + x - ch] : 0, b = y ? out[o - stride + x] : 0, c = x >= ch && y ? out[o - stride + x - ch] : 0;
      let p = line[x];
      if (f === 1) p += a;
      else if (f === 2) p += b;
      else if (f === 3) p += (a + b) >> 1;
      else if (f === 4) {
        const pa = Math.abs(b - c), pb = Math.abs(a - c), pc = Math.abs(a + b - 2 * c);
        p += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[o + x] = p & 255;
    }
  }
  return {width, height, channels: ch, pixels: out};
}

// The palette colours with at least `min` pixels of exactly that colour.
function paletteColours(png, min) {
  const counts = new Map();
  const {pixels, channels} = png;
  for (let i = 0; i < pixels.length; i += channels) {
    const hex = '#' + [pixels[i], pixels[i + 1], pixels[i + 2]].map((v) => v.toString(16).padStart(2, '0')).join('');
    counts.set(hex, (counts.get(hex) || 0) + 1);
  }
  return PALETTE.filter((c) => (counts.get(c) || 0) >= min);
}

async function main() {
  const {targetId} = await send('Target.createTarget', {url: 'about:blank'});
  const {sessionId} = await send('Target.attachToTarget', {targetId, flatten: true});
  const s = (method, params) => send(method, params, sessionId);
  const evaluate = async (expression) => {
    const r = await s('Runtime.evaluate', {expression, returnByValue: true, awaitPromise: true});
    if (r.exceptionDetails) throw new Error('in the page: ' + JSON.stringify(r.exceptionDetails).slice(0, 400));
    return r.result.value;
  };
  await s('Page.enable');
  await s('Emulation.setDeviceMetricsOverride', {width: 1280, height: 1000, deviceScaleFactor: 1, mobile: false});
  const loaded = once('Page.loadEventFired');
  await s('Page.navigate', {url: 'file://' + report});
  await loaded;

  // One chart of each kind per group, one verdict per group.
  const dom = await evaluate(`(() => {
    const groups = [...document.querySelectorAll('section.group')];
    return {
      groups: groups.length,
      charts: groups.map(g => [g.querySelectorAll('svg.chart.rps').length, g.querySelectorAll('svg.chart.latency').length]),
      verdicts: document.querySelectorAll('li.verdict').length,
      fastest: [...document.querySelectorAll('li.verdict')].filter(v => /is fastest/.test(v.textContent)).length,
      workloads: document.querySelectorAll('table.workload').length,
      hit: [...document.querySelectorAll('table.workload th')].filter(t => t.textContent === 'read hit ratio').length,
      perop: [...document.querySelectorAll('table.workload th')].filter(t => /^(read|update) p99$/.test(t.textContent)).length,
      sortable: document.querySelectorAll('table.sortable thead th').length,
      scripts: [...document.scripts].filter(x => x.src).length,
      external: [...document.querySelectorAll('[src],link[href]')].length,
    };
  })()`);
  check('one group section per group', dom.groups === expect.groups, dom.groups);
  check('each group has one req/s chart and one latency chart', dom.charts.every((c) => c[0] === 1 && c[1] === 1), dom.charts);
  check('a verdict per group', dom.verdicts === expect.groups, dom.verdicts);
  check('verdicts name the fastest', dom.fastest >= expect.fastest, dom.fastest);
  check('a table per workload', dom.workloads === expect.workloads, dom.workloads);
  check('workload tables: hit ratio and per-op rows', dom.hit === expect.workloads && dom.perop >= expect.workloads, dom);
  check('the comparison is a table with headings to sort by', dom.sortable >= 7, dom.sortable);
  check('self-contained: nothing loaded', dom.scripts === 0 && dom.external === 0, dom);

  // The crafted group: a log axis, a skipped row with its reason, a failed bar marked as such.
  const crafted = await evaluate(`(() => {
    const g = document.getElementById(${JSON.stringify(expect.log_group)});
    const svg = g.querySelector('svg.chart.rps');
    return {
      caption: svg.querySelector('text.caption').textContent,
      ticks: [...svg.querySelectorAll('text.tick')].map(t => t.textContent),
      missing: [...svg.querySelectorAll('text.missing')].map(t => t.textContent),
      failedBars: svg.querySelectorAll('rect.bar.failed').length,
      flags: [...svg.querySelectorAll('text.flag')].map(t => t.textContent),
      verdict: g.querySelector('p.gverdict').textContent,
    };
  })()`);
  check('a group spanning 1000x has a log axis', /log scale/.test(crafted.caption), crafted.caption);
  check('log axis ticks are decades', crafted.ticks.join(' ') === expect.log_ticks, crafted.ticks);
  check('the skipped row is shown with its reason', crafted.missing.some((t) => t.includes(expect.skip_reason)), crafted.missing);
  check('the failed bar is marked on the bar', crafted.failedBars === 1 && crafted.flags.some((t) => /FAILED/.test(t)), crafted);
  check('the verdict ranks the fastest by how much', new RegExp(expect.verdict).test(crafted.verdict), crafted.verdict);
  check('the verdict says what is suspect', /Suspect: .*tmpfs/.test(crafted.verdict), crafted.verdict);

  // Time series: req/s and p99 over time, a line per job in its bar's colour, for the groups
  // whose jobs lasted several intervals (expect.timeline: group id -> lines), none elsewhere.
  const timeline = await evaluate(`[...document.querySelectorAll('section.group')].map(g => {
    const chart = (cls) => { const svg = g.querySelector('svg.chart.timeline.' + cls);
      if (!svg) return null;
      const box = svg.getBoundingClientRect();
      const lines = [...svg.querySelectorAll('polyline.line')];
      return {lines: lines.length, colours: lines.map(l => l.getAttribute('stroke')).sort(),
        points: lines.map(l => l.points.numberOfItems),
        inside: lines.every(l => { const b = l.getBoundingClientRect();
          return b.left >= box.left && b.right <= box.right && b.top >= box.top - 1 && b.bottom <= box.bottom; }),
        caption: svg.querySelector('text.caption').textContent};
    };
    const bars = [...g.querySelectorAll('svg.chart.rps rect.bar')].map(b => b.getAttribute('fill')).sort();
    return {id: g.id, rps: chart('rps-time'), p99: chart('p99-time'), bars};
  })`);
  for (const t of timeline) {
    const want = (expect.timeline || {})[t.id];
    if (!want) {
      check(t.id + ': no time series charts (every job within one interval)', !t.rps && !t.p99, t);
      continue;
    }
    for (const [what, c] of [['req/s', t.rps], ['p99', t.p99]]) {
      check(t.id + ': a ' + what + '-over-time chart with a line per job', c && c.lines === want, c);
      if (!c) continue;
      check(t.id + ': ' + what + ' lines have a point per interval', c.points.every((n) => n >= expect.min_points), c.points);
      check(t.id + ': ' + what + ' lines in their bars\' colours', JSON.stringify(c.colours) === JSON.stringify(t.bars),
        [c.colours, t.bars]);
      check(t.id + ': ' + what + ' lines inside the chart', c.inside, c);
      check(t.id + ': ' + what + ' caption names the interval', /over time per 0.10 s interval/.test(c.caption), c.caption);
    }
  }

  // No two text labels overlap (every <text> of every chart, as laid out in the page).
  const overlaps = await evaluate(`(() => {
    const boxes = [...document.querySelectorAll('svg text')].map(t => [t.getBoundingClientRect(), t.textContent]);
    const out = [];
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, ta] = boxes[i], [b, tb] = boxes[j];
        if (a.width && b.width && a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
          out.push(ta + ' / ' + tb);
      }
    return {count: boxes.length, out: out.slice(0, 5), n: out.length};
  })()`);
  check('labels measured', overlaps.count > 20, overlaps.count);
  check('no two text labels overlap', overlaps.n === 0, overlaps.out);
  // ... nor run past their chart
  const outside = await evaluate(`[...document.querySelectorAll('svg.chart')].flatMap(svg => {
    const r = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('text')].filter(t => { const b = t.getBoundingClientRect();
      return b.left < r.left - 0.5 || b.right > r.right + 0.5; }).map(t => t.textContent);
  }).slice(0, 5)`);
  check('every label inside its chart', outside.length === 0, outside);

  // Sorting: a click on a heading orders the rows by it; a second click reverses.
  const clickHeading = async (text) => {
    const at = await evaluate(`(() => {
      const th = [...document.querySelectorAll('table.sortable thead th')].find(h => h.textContent.startsWith(${JSON.stringify(text)}));
      th.scrollIntoView({block: 'center'});
      const r = th.getBoundingClientRect();
      return {x: r.left + r.width / 2, y: r.top + r.height / 2, i: th.cellIndex};
    })()`);
    for (const type of ['mousePressed', 'mouseReleased'])
      await s('Input.dispatchMouseEvent', {type, x: at.x, y: at.y, button: 'left', clickCount: 1});
    return evaluate(`[...document.querySelector('table.sortable').tBodies[0].rows].map(r => {
      const c = r.cells[${at.i}]; const v = c.getAttribute('data-v');
      return v === null ? c.textContent.trim().toLowerCase() : v === '' ? null : parseFloat(v); })`);
  };
  const ordered = (xs, dir) => {  // by dir (1 ascending, -1 descending), no figure (null) last
    const first = xs.indexOf(null);
    if (first >= 0 && xs.slice(first).some((x) => x !== null)) return false;
    const v = xs.filter((x) => x !== null);
    return v.every((x, k) => k === 0 || dir * (typeof x === 'number' ? x - v[k - 1] : x > v[k - 1] ? 1 : x < v[k - 1] ? -1 : 0) >= 0);
  };
  const before = await evaluate(`[...document.querySelector('table.sortable').tBodies[0].rows].map(r => r.cells[1].textContent)`);
  const down = await clickHeading('req/s');
  check('req/s: first click sorts descending (no figure last)', ordered(down, -1) && down[0] !== null, down);
  check('the click changed the order', JSON.stringify(before) !==
    JSON.stringify(await evaluate(`[...document.querySelector('table.sortable').tBodies[0].rows].map(r => r.cells[1].textContent)`)));
  const up = await clickHeading('req/s');
  check('req/s: second click sorts ascending', ordered(up, 1) && up[0] !== null, up);
  const p99 = await clickHeading('p99');
  check('p99 sorts (descending first)', ordered(p99, -1), p99);
  const names = await clickHeading('job');
  check('job: sorts by name, ascending first', ordered(names, 1), names);
  const heading = await evaluate(`[...document.querySelectorAll('table.sortable thead th')].find(h => h.textContent.startsWith('job')).getAttribute('aria-sort')`);
  check('the sorted heading says so', heading === 'ascending', heading);

  // Screenshots of groups: exactly the expected number of distinct bar colours.
  for (const [id, n] of Object.entries(expect.colours)) {
    const r = await evaluate(`(() => { const e = document.querySelector('#${id} svg.chart.rps');
      e.scrollIntoView(); const b = e.getBoundingClientRect();
      return {x: b.left + scrollX, y: b.top + scrollY, width: b.width, height: b.height}; })()`);
    const shot = await s('Page.captureScreenshot', {format: 'png', captureBeyondViewport: true, clip: {...r, scale: 1}});
    const png = decodePng(Buffer.from(shot.data, 'base64'));
    fs.writeFileSync(work + '/' + id + '.png', Buffer.from(shot.data, 'base64'));
    const colours = paletteColours(png, 40);
    check(id + ': ' + n + ' distinct bar colours', colours.length === n, colours);
  }
  // In print, the charts fit an A4 page's width.
  await s('Emulation.setEmulatedMedia', {media: 'print'});
  const printWide = await evaluate(`(() => { const mm = 96 / 25.4, page = (210 - 24) * mm;
    return [...document.querySelectorAll('svg.chart')].filter(s => s.getBoundingClientRect().width > page + 1).length; })()`);
  check('in print, charts fit an A4 page', printWide === 0, printWide);
  await s('Emulation.setEmulatedMedia', {media: ''});
  if (keep) await keepPictures(s, evaluate);
}

// The verdict, the tables, the whole page and its A4 print, for a person to look at.
async function keepPictures(s, evaluate) {
  for (const [name, sel] of [['verdict', 'ul.verdicts'], ['table', 'table.results'], ['workload', 'table.workload']]) {
    const r = await evaluate(`(() => { const b = document.querySelector('${sel}').getBoundingClientRect();
      return {x: 0, y: b.top + scrollY - 8, width: 1280, height: b.height + 16}; })()`);
    const shot = await s('Page.captureScreenshot', {format: 'png', captureBeyondViewport: true, clip: {...r, scale: 1}});
    fs.writeFileSync(work + '/' + name + '.png', Buffer.from(shot.data, 'base64'));
  }
  const height = await evaluate('document.documentElement.scrollHeight');
  const full = await s('Page.captureScreenshot', {format: 'png', captureBeyondViewport: true,
    clip: {x: 0, y: 0, width: 1280, height: Math.min(height, 12000), scale: 1}});
  fs.writeFileSync(work + '/page.png', Buffer.from(full.data, 'base64'));
  const pdf = await s('Page.printToPDF', {paperWidth: 8.27, paperHeight: 11.69, preferCSSPageSize: true});
  fs.writeFileSync(work + '/page.pdf', Buffer.from(pdf.data, 'base64'));
}

main().then(() => {
  console.log('html: ' + pass + ' passed, ' + fail + ' failed');
}, (e) => {
  fail++;
  console.log('FAIL: ' + e.message);
  console.log('html: ' + pass + ' passed, ' + fail + ' failed');
}).finally(() => {
  clearTimeout(killer);
  try {
    toChrome.write(JSON.stringify({id: 999999, method: 'Browser.close'}) + '\0');
  } catch (e) { /* already gone */ }
  setTimeout(() => proc.kill('SIGKILL'), 2000).unref();
  proc.on('exit', () => process.exit(fail === 0 ? 0 : 1));
});
