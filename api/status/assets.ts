/** The pages' stylesheet: system fonts, text at 4.5:1 contrast or more, readable on a phone. */
export const STYLESHEET = `body{font:16px/1.5 system-ui,sans-serif;color:#111;background:#fff;margin:0}
main{max-width:44rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
a{color:#0645ad}code,.mono{font-family:ui-monospace,monospace;font-size:.9em;overflow-wrap:anywhere}
.status{font-size:1.25rem;font-weight:600}.reason{background:#f3f4f6;border-left:4px solid #1f4e9c;padding:.5rem .75rem}
ol.timeline{padding-left:1.25rem}ol.timeline li{margin:.35rem 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{font-weight:600}dd{margin:0}
table{border-collapse:collapse;width:100%}th,td{text-align:left;border-bottom:1px solid #d0d4da;padding:.35rem;vertical-align:top}
.qr svg{width:10rem;height:10rem}.note{color:#444}
`;

/**
 * The pages' script: no framework. It follows the execution's event stream and, at each event,
 * fetches the page again and puts its new `main` in place (all rendering and escaping stay on the
 * server). Without a stream (no slot, an error, an old browser) it asks for the page every few
 * seconds instead, and every two seconds while a deposit may be confirming (the stream carries
 * status changes, not blocks). It counts deadlines down once a second.
 */
export const SCRIPT = `(function () {
  'use strict';
  var main = document.getElementById('status-main');
  if (!main || !window.fetch || !window.DOMParser) return;
  var busy = false, again = false, timer = 0, stream = null, following = 'none';
  function follows(how) { following = how; main.setAttribute('data-following', how); }
  function data(name) { return main.getAttribute('data-' + name); }
  function schedule() {
    clearTimeout(timer);
    if (data('final') === 'true') return;
    var ms = data('confirming') === 'true' ? 2000 : stream && stream.readyState !== 2 ? 0 : 5000;
    if (ms > 0) timer = setTimeout(refresh, ms);
  }
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.pathname, { headers: { accept: 'text/html' }, cache: 'no-store' })
      .then(function (r) { return r.status === 429 || r.status >= 500 ? null : r.text(); })
      .then(function (text) {
        if (text === null) return;
        var next = new DOMParser().parseFromString(text, 'text/html').getElementById('status-main');
        if (!next) return;
        for (var i = main.attributes.length - 1; i >= 0; i--) if (main.attributes[i].name.indexOf('data-') === 0) main.removeAttribute(main.attributes[i].name);
        for (var j = 0; j < next.attributes.length; j++) if (next.attributes[j].name.indexOf('data-') === 0) main.setAttribute(next.attributes[j].name, next.attributes[j].value);
        main.setAttribute('data-following', following);
        main.replaceChildren.apply(main, Array.prototype.slice.call(next.childNodes));
        tick();
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); } else schedule();
      });
  }
  function follow() {
    var url = data('events');
    if (!url || !window.EventSource) { follows(data('final') === 'true' ? 'done' : 'polling'); schedule(); return; }
    stream = new EventSource(url);
    follows('stream');
    stream.addEventListener('status', refresh);
    stream.addEventListener('refund', refresh);
    stream.onerror = function () {
      if (stream.readyState === 2) { follows(data('final') === 'true' ? 'done' : 'polling'); schedule(); }
    };
    schedule();
  }
  function tick() {
    var now = Date.now();
    var items = main.querySelectorAll('[data-countdown]');
    for (var i = 0; i < items.length; i++) {
      var left = Math.max(0, Math.floor((Date.parse(items[i].getAttribute('data-countdown')) - now) / 1000));
      var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      items[i].textContent = left === 0 ? 'passed' : (h ? h + ' h ' : '') + (h || m ? m + ' min ' : '') + s + ' s left';
    }
  }
  setInterval(tick, 1000);
  tick();
  follow();
})();
`;
