// words.js: what the web host says to a person, without a page: errors in
// words with the action that fixes them, and names (of screens, Instances,
// connections) instead of ids. Codes are for the admin's debug view only
// (codeOf); a person reads sentences.

// problem turns an error of the host ({code, message, reason, exitCode,
// connection}) into {text, action}: what happened, in words, and what fixes
// it. action is one of:
//   retry       run it again
//   connect     connect the connection (names it: connection)
//   fix_key     the provider refused the connection's key: change it
//   grant       the Instance needs the network permission
//   settings    something only the Instance's settings change
//   sign_in     the session ended
//   null        nothing the person can do here
// names gives the words: {plugin, connection(id) -> label}.
export function problem(err, names) {
  names = names || {};
  var e = err || {};
  var label = function (id) { return (names.connection && names.connection(id)) || 'the account'; };
  switch (e.code) {
    case 'UNREACHABLE':
      return { text: 'The server cannot be reached. Check your connection and try again.', action: 'retry' };
    case 'UNAUTHENTICATED':
      return { text: 'You were signed out. Sign in again to go on.', action: 'sign_in' };
    case 'PLUGIN_STORAGE_QUOTA_EXCEEDED':
      return { text: 'This plugin\'s storage is full. Delete something, or reset its data in its settings.', action: 'settings' };
    case 'PLUGIN_STORAGE_CONFLICT':
      return { text: 'This changed somewhere else in the meantime. Try again with what is there now.', action: 'retry' };
    case 'PLUGIN_STORAGE_NOT_FOUND':
      return { text: 'This is not there any more: it was deleted or moved.', action: null };
    case 'PLUGIN_STORAGE_PERMISSION_DENIED':
    case 'FORBIDDEN':
      return { text: 'This Instance is disabled, or it is not yours.', action: 'settings' };
    case 'PERMISSION_DENIED':
      return { text: 'This Instance may not use the network, so it cannot show pictures.', action: 'grant' };
    case 'PLUGIN_STORAGE_INVALID':
    case 'BAD_USER_INPUT':
      return { text: 'The plugin asked for something the host does not allow' + (e.message ? ': ' + e.message : '.'), action: null };
    case 'CAPABILITY_FAILED':
      return failed(e, label, names);
  }
  return { text: 'Something went wrong' + (names.plugin ? ' in ' + names.plugin : '') + '. Try again; if it keeps failing, the plugin may need an update.', action: 'retry' };
}

function failed(e, label, names) {
  var who = names.plugin || 'The plugin';
  if (e.connection && e.refused) {
    return { text: label(e.connection) + ' refused the key (HTTP ' + e.refused + '). Enter a new one.', action: 'fix_key', connection: e.connection };
  }
  switch (e.reason) {
    case 'connection_required':
      return { text: 'Connect ' + label(e.connection) + ' to use this.', action: 'connect', connection: e.connection || null };
    case 'network_denied':
      return { text: who + ' needs your permission to use the network.', action: 'grant' };
    case 'timeout':
      return { text: who + ' took too long to answer. Try again in a moment.', action: 'retry' };
    case 'busy':
      return { text: 'The server is busy. Try again in a moment.', action: 'retry' };
    case 'memory':
      return { text: who + ' needed more memory than it may use.', action: null };
    case 'no_module':
      return { text: who + ' cannot do this in this version.', action: null };
  }
  return { text: who + ' ran into a problem and could not finish. Try again; if it keeps failing, the plugin may need an update.', action: 'retry' };
}

// codeOf is an error's code and reason, for the debug view.
export function codeOf(e) {
  if (!e) return '';
  return e.code + (e.reason ? ' (' + e.reason + (e.exitCode !== undefined ? ' ' + e.exitCode : '') + ')' : '') + (e.message ? ' – ' + e.message : '');
}

// screenLabel names a screen or home extension ({id, config}): its app
// bar's title when that is plain text, else its id in words ("week_plan"
// reads "Week plan").
export function screenLabel(ext) {
  var t = ext && ext.config && ext.config.app_bar && ext.config.app_bar.title;
  if (typeof t === 'string' && t.trim() !== '' && t.indexOf('{{') < 0) return t.trim();
  return idWords(ext ? ext.id : '');
}

// idWords reads an id as words: its first letter upper case, _ - and .
// as spaces.
export function idWords(id) {
  var s = String(id || '').replace(/[_.-]+/g, ' ').trim();
  return s ? s[0].toUpperCase() + s.slice(1) : '';
}

// iconName is the name of an icon value of a config ("home" or {name}).
export function iconName(icon) {
  if (typeof icon === 'string') return icon;
  return icon && typeof icon.name === 'string' ? icon.name : null;
}

// instanceName names an Instance with its plugin: "Notes · Work", or the
// plugin's name alone when the Instance carries it.
export function instanceName(plugin, instance) {
  if (!instance || instance === plugin) return plugin || '';
  return plugin + ' · ' + instance;
}

// when says how long ago an ISO time was, from now (milliseconds).
export function when(iso, now) {
  var t = Date.parse(iso);
  if (isNaN(t)) return '';
  var s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return Math.round(s / 60) + ' min ago';
  if (s < 86400) return Math.round(s / 3600) + ' h ago';
  return new Date(t).toLocaleDateString();
}

// bytes says a size in words: 12 bytes, 3.4 KiB, 1.2 MiB.
export function bytes(n) {
  if (n < 1024) return n + (n === 1 ? ' byte' : ' bytes');
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KiB';
  return (n / 1024 / 1024).toFixed(1) + ' MiB';
}

// plural says a count with its noun: 1 item, 3 items.
export function plural(n, one, many) { return n + ' ' + (n === 1 ? one : (many || one + 's')); }
