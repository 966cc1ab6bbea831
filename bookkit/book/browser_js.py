"""The JavaScript :mod:`bookkit.book.browser` runs in each page of the book (kept apart: it is data to the checker).

- :data:`STATE`: what a page shows (text, figures and their sources, plotly legends, glued values, tables...);
- :data:`LAYOUT`: the tables of the text column wider than the column without a box that scrolls them sideways,
  and the table cells whose one word or number the page breaks over lines;
- :data:`PAGE_FILES`: the files a page loaded (itself and every resource it fetched) and their sizes;
- :data:`MATHJAX_DONE`: waits for MathJax to finish typesetting.
"""

STATE = r"""
const cells = Array.from(document.querySelectorAll('div.cell'));
const capOf = (e) => {  // inside a <figure> whose <figcaption> has text
  const f = e.closest('figure'); const c = f && f.querySelector('figcaption');
  return !!(c && c.textContent.trim());
};
const figOf = (el) => {
  const imgs = Array.from(el.querySelectorAll('.cell_output img'));
  const plots = Array.from(el.querySelectorAll('.cell_output div.plotly-graph-div'));
  return {imgs: imgs.map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0,
                                alt: (i.getAttribute('alt') || '').trim(), caption: capOf(i)})),
          plots: plots.map(p => !!p.querySelector('svg')),
          plotmeta: plots.map(p => {
            const l = p.closest('[aria-label]');
            return {label: l ? l.getAttribute('aria-label').trim() : '', caption: capOf(p)};
          })};
};
return {
  text: document.body ? document.body.innerText : '',
  pasted: Array.from(document.querySelectorAll('span.pasted-text')).map(s => s.textContent),
  cells: cells.map(figOf),
  plotly: Array.from(document.querySelectorAll('div.plotly-graph-div')).map(p => !!p.querySelector('svg')),
  images: Array.from(document.images).map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0})),
  links: Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href')),
  sysmsg: document.querySelectorAll('.system-message, .problematic').length,
  prose: (() => {  // the visible text outside code: where raw TeX would mean MathJax did not run
    const main = document.querySelector('main') || document.body;
    if (!main) return '';
    const c = main.cloneNode(true);
    c.querySelectorAll('pre, code, script, style, mjx-container, .cell_input, .highlight').forEach(e => e.remove());
    c.querySelectorAll('td, th').forEach(e => e.append(' '));  // cells apart: no number made of two cells
    return c.textContent;
  })(),
  math: document.querySelectorAll('.math').length,
  mjx: document.querySelectorAll('mjx-container').length,
  stderr: document.querySelectorAll('.output.stderr, .stderr').length,
  outputs: Array.from(document.querySelectorAll('.cell_output')).map(o => {  // also in folded cells
    const c = o.cloneNode(true);
    c.querySelectorAll('script, style').forEach(e => e.remove());
    c.querySelectorAll('td, th').forEach(e => e.append(' '));
    return c.textContent;
  }),
  viewport: window.innerWidth,
  figures: Array.from(document.querySelectorAll('main .cell_output img, main figure img')).map(
    i => i.getAttribute('src')),
  plotlegend: Array.from(document.querySelectorAll('div.plotly-graph-div')).map(p => {
    const fl = p._fullLayout || {}; const data = p._fullData || p.data || [];
    // the title the figure was given (p.layout): plotly.js fills _fullLayout's empty title with the
    // placeholder 'Click to enter Plot title'
    const t = (p.layout || {}).title;
    return {traces: data.length, title: String((t && typeof t === 'object' ? t.text : t) || '').trim(),
            legend: !!fl.showlegend && data.some(t => t.showlegend !== false && t.visible !== false)};
  }),
  ran: Array.from(document.querySelectorAll('main p')).map(e => e.textContent).filter(
    t => t.startsWith('What ran here')),
  tables: Object.fromEntries(['replib-reproduces', 'replib-summary'].map(k => [k,
    Array.from(document.querySelectorAll('table.' + k + ' tbody tr')).map(
      tr => Array.from(tr.querySelectorAll('td')).map(td => td.textContent.trim()))])),  // also when folded
};
"""
#: the page's layout faults, folded content (dropdowns, toggles) unfolded while it is measured, so that a table a
#: reader unfolds is measured too: ``wide``, the tables of the text column wider than the column that no box
#: scrolls sideways (a wide table scrolls in its own box: ``div.replib-table``, the theme's table container, a
#: notebook output); ``split``, the cells of every table whose text is a number, or a word with no place to break
#: (no space, hyphen or slash), drawn on more than one line: a number split into digits ("1070/08"), a header
#: split into letters ("tas/k")
LAYOUT = r"""
const col = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const folded = Array.from(document.querySelectorAll('details:not([open])'));
const hidden = Array.from(document.querySelectorAll('.toggle-hidden'));
folded.forEach(d => d.open = true); hidden.forEach(e => e.classList.remove('toggle-hidden'));
const pad = getComputedStyle(col);  // the column's content box: the text's width, without its padding
const right = col.getBoundingClientRect().right - parseFloat(pad.paddingRight);
const avail = col.clientWidth - parseFloat(pad.paddingLeft) - parseFloat(pad.paddingRight);
const wide = [], split = [];
col.querySelectorAll('table').forEach((t, i) => {
  const r = t.getBoundingClientRect();
  if (r.width === 0) return;
  let el = t.parentElement, box = null;  // the nearest box that scrolls it sideways, inside the column
  while (el && el !== col) {
    const o = getComputedStyle(el).overflowX;
    if ((o === 'auto' || o === 'scroll') && el.getBoundingClientRect().right <= right + 1) { box = el; break; }
    el = el.parentElement;
  }
  if (r.right > right + 1 && !box) {
    const head = Array.from(t.querySelectorAll('th')).map(h => h.textContent.trim()).join(' | ');
    wide.push({index: i + 1, width: Math.round(r.width), column: Math.round(avail), head: head.slice(0, 80)});
  }
});
document.querySelectorAll('main table').forEach((t, i) => {
  t.querySelectorAll('td, th').forEach(c => {
    const text = c.textContent.trim();
    // a number, or a word with no place to break (a hyphen or a slash is one): never drawn on two lines
    const whole = /^[-+\u2212]?[\d.,]+(e[-+\u2212]?\d+)?%?$/i.test(text) || /^[\w.]+$/.test(text);
    if (!whole || c.getBoundingClientRect().width === 0) return;
    const range = document.createRange();
    range.selectNodeContents(c);
    const rects = Array.from(range.getClientRects()).filter(r => r.width > 0).sort((a, b) => a.top - b.top);
    let lines = 0, bottom = -Infinity;  // a box whose middle is below the line's bottom starts a new line
    rects.forEach(r => { if ((r.top + r.bottom) / 2 > bottom) { lines++; bottom = r.bottom; } });
    if (lines > 1) split.push({table: i + 1, text: text.slice(0, 40), lines: lines});
  });
});
folded.forEach(d => d.open = false); hidden.forEach(e => e.classList.add('toggle-hidden'));
return {wide: wide, split: split};
"""
#: every file the page loaded (the document and each resource it fetched): its URL and its decoded size
PAGE_FILES = r"""
const nav = performance.getEntriesByType('navigation')[0];
return [nav].concat(performance.getEntriesByType('resource')).filter(e => e).map(
  e => ({url: e.name, size: e.decodedBodySize || e.encodedBodySize || e.transferSize || 0}));
"""
MATHJAX_DONE = r"""
const done = arguments[arguments.length - 1];
if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
  MathJax.startup.promise.then(() => done(true), () => done(false));
} else { done(null); }
"""
