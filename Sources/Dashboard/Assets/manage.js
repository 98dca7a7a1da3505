// APNs Sandbox dashboard — the Apps & devices view (to be built).
import { h } from './ui.js';

export default {
  title: 'Apps & devices',
  mount(main) {
    main.append(h('h1', {}, 'Apps & devices'), h('p', { class: 'muted' }, 'This view is being built.'));
  },
};
