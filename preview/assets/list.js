// list.js: the web host's list of the viewer's Instances (GET /app), filled
// from GraphQL: every Instance of every Installation, with a link per screen
// and home extension.
(function () {
  'use strict';
  var cfg = JSON.parse(document.getElementById('ph-list').textContent);
  var list = document.getElementById('list');
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
  fetch(location.origin + cfg.graphql, { method: 'POST', credentials: 'same-origin', cache: 'no-store',
    headers: { 'Content-Type': 'application/json', 'X-Pluginhost-App': '1' },
    body: JSON.stringify({ query: '{ installations { id name description version instances { id name enabled } extensions { id point placement description } } }' }) })
  .then(function (r) { return r.json(); }).then(function (body) {
    list.textContent = '';
    if (body.errors || body.error) { list.appendChild(el('p', 'err', 'Could not list your plugins: ' + ((body.errors && body.errors[0].message) || body.error.message))); return; }
    var n = 0;
    body.data.installations.forEach(function (instl) {
      instl.instances.forEach(function (inst) {
        n++;
        var box = el('div', 'inst');
        box.setAttribute('data-instance', inst.id);
        box.appendChild(el('h2', null, instl.name + ' · ' + inst.name));
        if (instl.description) box.appendChild(el('p', 'desc', instl.description));
        box.appendChild(el('div', 'meta' + (inst.enabled ? '' : ' off'), 'version ' + instl.version + (inst.enabled ? '' : ' · disabled')));
        // Screens and home cards the user may open; a hidden one opens
        // only from the plugin's own screens.
        instl.extensions.forEach(function (e) {
          if ((e.point !== 'screen' && e.point !== 'home') || e.placement === 'hidden') return;
          var a = el('a', null, e.description || e.id);
          a.title = e.id + ' (' + e.point + ')';
          a.setAttribute('data-extension', e.id);
          a.href = '/app/' + encodeURIComponent(inst.id) + '/' + encodeURIComponent(e.id);
          box.appendChild(a);
        });
        list.appendChild(box);
      });
    });
    if (!n) list.appendChild(el('p', null, 'You have no plugin Instances yet.'));
  }, function () { list.textContent = 'The server cannot be reached.'; });
})();
