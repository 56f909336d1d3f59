// ESLint's recommended rules for the browser runtime of preview/assets: ES
// modules (a page runs the bundle of its entry, package preview/assets), so
// every name a module uses from another is imported, which no-undef checks.
// core.js and hostcache.js also run under node, for the conformance tests
// and the host cache's unit tests.
const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  js.configs.recommended,
  {
    files: ["preview/assets/*.js"],
    languageOptions: { sourceType: "module", ecmaVersion: 2020, globals: { ...globals.browser } },
    rules: { "no-unused-vars": ["error", { caughtErrors: "none" }] },
  },
];
