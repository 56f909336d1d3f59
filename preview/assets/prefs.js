// prefs.js: the person's choices the web host remembers in this browser:
// the theme. Light and dark follow the device unless the person picks one;
// a pick is kept in the cookie pluginhost_theme (a year, this site only), so
// that the server draws the page in it from the first paint (the html
// element's data-theme) and app.css's colours follow.

var COOKIE = 'pluginhost_theme';

// themeChoice is the person's pick: 'light', 'dark', or 'system' (the
// device's).
export function themeChoice() {
  var m = /(?:^|;\s*)pluginhost_theme=(light|dark)(?:;|$)/.exec(document.cookie);
  return m ? m[1] : 'system';
}

// setThemeChoice keeps a pick ('system' forgets it) and applies it.
export function setThemeChoice(choice) {
  var secure = location.protocol === 'https:' ? '; Secure' : '';
  if (choice === 'light' || choice === 'dark') document.cookie = COOKIE + '=' + choice + '; Path=/; Max-Age=31536000; SameSite=Lax' + secure;
  else document.cookie = COOKIE + '=; Path=/; Max-Age=0; SameSite=Lax' + secure;
  applyTheme();
}

var dark = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;

// themeMode is the theme in effect: the pick, else the device's.
export function themeMode() {
  var c = themeChoice();
  if (c !== 'system') return c;
  return dark && dark.matches ? 'dark' : 'light';
}

// applyTheme marks the page with the pick (app.css follows the device
// when there is none).
export function applyTheme() {
  var c = themeChoice();
  if (c === 'system') document.documentElement.removeAttribute('data-theme');
  else document.documentElement.setAttribute('data-theme', c);
}

// watchTheme calls fn(mode) when the device's theme changes.
export function watchTheme(fn) {
  if (dark && dark.addEventListener) dark.addEventListener('change', function () { fn(themeMode()); });
}
