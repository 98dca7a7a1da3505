// APNs Sandbox dashboard — the Notification view (to be built).
import { h } from './ui.js';

export default {
  title: 'Notification',
  mount(main) {
    main.append(h('h1', {}, 'Notification'), h('p', { class: 'muted' }, 'This view is being built.'));
  },
};
