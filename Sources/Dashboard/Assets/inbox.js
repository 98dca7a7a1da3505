// APNs Sandbox dashboard — the Inbox view (to be built).
import { h } from './ui.js';

export default {
  title: 'Inbox',
  mount(main) {
    main.append(h('h1', {}, 'Inbox'), h('p', { class: 'muted' }, 'This view is being built.'));
  },
};
