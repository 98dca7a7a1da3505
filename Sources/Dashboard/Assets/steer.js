// APNs Sandbox dashboard — the Steering view (to be built).
import { h } from './ui.js';

export default {
  title: 'Steering',
  mount(main) {
    main.append(h('h1', {}, 'Steering'), h('p', { class: 'muted' }, 'This view is being built.'));
  },
};
