// theme.js: colour arithmetic of the runtime's themes: rgba reads a hex
// colour (#rgb, #rrggbb, #rrggbbaa) into [r, g, b, a] (null when it is not
// one); contrast is the WCAG 2 contrast ratio of two opaque colours (null
// when either is not opaque), which the runtime checks at 4.5:1.

export function rgba(hex) {
  var h = hex.slice(1);
  if (h.length === 3) h = h.replace(/./g, '$&$&') + 'ff';
  else if (h.length === 6) h += 'ff';
  if (!/^[0-9a-fA-F]{8}$/.test(h)) return null;
  return [0, 2, 4, 6].map(function (i) { return parseInt(h.slice(i, i + 2), 16); });
}
export function contrast(a, b) {
  var x = rgba(a), y = rgba(b);
  if (!x || !y || x[3] !== 255 || y[3] !== 255) return null;
  function lum(c) {
    var ch = c.slice(0, 3).map(function (v) { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
  }
  var l1 = lum(x), l2 = lum(y);
  return (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
}
