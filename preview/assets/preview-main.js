// preview-main.js: the standalone preview's start: one surface, the
// extension the page was made for, on the fixtures' host (fixtures.js), as
// window.pluginhostPreview.
import { Runtime } from './runtime.js';
import { fixturesHost } from './fixtures.js';

Runtime({ api: true, makeHost: fixturesHost });
