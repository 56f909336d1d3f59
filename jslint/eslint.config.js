// ESLint's recommended rules for the browser runtime of preview/assets:
// plain scripts (no modules), run by the preview and the web host; core.js
// and hostcache.js also run under node, for the conformance tests and the
// host cache's unit tests.
const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  js.configs.recommended,
  {
    files: ["preview/assets/*.js"],
    languageOptions: { sourceType: "script", ecmaVersion: 2020, globals: { ...globals.browser } },
    rules: { "no-unused-vars": ["error", { caughtErrors: "none" }] },
  },
  {
    files: ["preview/assets/core.js", "preview/assets/hostcache.js"],
    languageOptions: { globals: { ...globals.node } },
  },
];
