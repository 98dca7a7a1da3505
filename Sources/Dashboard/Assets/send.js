// APNs Sandbox dashboard — the Send a push view (to be built).
import { h } from './ui.js';

export default {
  title: 'Send a push',
  mount(main) {
    main.append(h('h1', {}, 'Send a push'), h('p', { class: 'muted' }, 'This view is being built.'));
  },
};
