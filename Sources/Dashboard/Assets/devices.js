// APNs Sandbox dashboard — the Devices view (to be built).
import { h } from './ui.js';

export default {
  title: 'Devices',
  mount(main) {
    main.append(h('h1', {}, 'Devices'), h('p', { class: 'muted' }, 'This view is being built.'));
  },
};
