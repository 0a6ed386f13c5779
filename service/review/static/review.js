// The review page's keys (docs/review.md). No inline script: the page's CSP allows
// scripts from this origin's files only.
(() => {
  const csrf = document.querySelector('meta[name=csrf]').content;
  const note = document.getElementById('note');
  if (!note) return;
  const item = note.dataset.item, seq = Number(note.dataset.seq);
  const status = document.getElementById('status');
  const cand = document.getElementById('candidate') || note.querySelector('mark.left');
  if (cand) cand.scrollIntoView({block: 'center'});
  // One action per page: once a decision is sent or a navigation started, further key
  // presses wait for the next page, so none lands on an item this page does not show.
  let leaving = false;
  function go(url) {
    if (leaving) return;
    leaving = true;
    location.assign(url);
  }
  function say(text, error) {
    status.className = error ? 'err' : '';
    status.textContent = text;
  }
  async function post(url, body) {
    if (leaving) return;
    leaving = true;
    let r, data;
    try {
      r = await fetch(url, {method: 'POST', credentials: 'same-origin',
        headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf},
        body: JSON.stringify(body || {})});
      data = await r.json().catch(() => ({}));
    } catch (e) {
      leaving = false; say('not sent: ' + e, true); return;
    }
    if (r.status === 409) { say(data.error + ' — showing the current item', true);
      location.reload(); return; }
    if (!r.ok) { leaving = false; say(data.error || ('refused (' + r.status + ')'), true); return; }
    location.assign(data.next);
  }
  function choice(id) {
    const s = document.getElementById(id);
    return s ? s.value : undefined;
  }
  function decide(kind) {
    if (!item) return;
    post('/review/decide', {item, seq, kind, category: choice('category'), scope: choice('scope')});
  }
  function offset(node, within) {  // characters of the note before (node, within)
    const r = document.createRange();
    r.setStart(note, 0);
    r.setEnd(node, within);
    return r.toString().length;
  }
  function mark() {  // the selected text of the note: PHI the machine did not propose
    const sel = window.getSelection();
    if (!item || !sel || sel.rangeCount === 0 || sel.isCollapsed) {
      say('select the string in the note first, then press m', true); return;
    }
    const r = sel.getRangeAt(0);
    if (!note.contains(r.startContainer) || !note.contains(r.endContainer)) {
      say('select a string inside the note', true); return;
    }
    const start = offset(r.startContainer, r.startOffset);
    const end = offset(r.endContainer, r.endOffset);
    post('/review/mark', {item, start, end, kind: 'phi', category: choice('category'),
      scope: choice('scope')});
  }
  function cycle(id) {
    const s = document.getElementById(id);
    if (s) { s.selectedIndex = (s.selectedIndex + 1) % s.options.length; say(id + ': ' + s.value); }
  }
  const logout = document.getElementById('logout');
  if (logout) logout.addEventListener('click', () => post('/review/logout'));
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.target.tagName === 'SELECT') return;
    const act = {p: () => decide('phi'), n: () => decide('not_phi'), u: () => decide('unsure'),
      r: () => decide('refer'), m: mark, z: () => post('/review/undo'),
      j: () => go('/review?at=' + (seq + 1)),
      ArrowRight: () => go('/review?at=' + (seq + 1)),
      k: () => go('/review/prev?at=' + seq),
      ArrowLeft: () => go('/review/prev?at=' + seq),
      c: () => cycle('category'), s: () => cycle('scope')}[e.key];
    if (act) { e.preventDefault(); if (!e.repeat) act(); }
  });
})();
