// APNs Sandbox — a push as its device's queue holds it: where it is, and its extension's state.

extension DeviceQueue {
    enum Place: Equatable {
        /// Accepted, its save not yet committed.
        case committing
        /// Waiting for the low-priority batch.
        case deferred
        /// Stored by APNs while the device is offline.
        case stored
        /// Held by the device: background budget used.
        case held
        /// `delivering` or `extension-running`.
        case presenting
    }

    struct Entry {
        var record: NotificationRecord
        let traits: PushTraits
        var place: Place
        /// What only a push whose extension runs has, out of line: inline it made every entry 1.6 KB (and every
        /// idle slot kept its dictionary's room for one).
        private var extensionState: ExtensionState?

        init(record: NotificationRecord, traits: PushTraits, place: Place) {
            self.record = record
            self.traits = traits
            self.place = place
        }

        /// While the extension runs: what to show if the runner never answers, and when.
        var fallback: (content: DisplayedContent, deadline: Int64)? {
            get { extensionState?.fallback }
            set { extensionState = ExtensionState.make(fallback: newValue, pendingStart: pendingStart) }
        }

        /// Set while `extension-running` waits for its commit: the start to hand out then.
        var pendingStart: ExtensionStart? {
            get { extensionState?.pendingStart }
            set { extensionState = ExtensionState.make(fallback: fallback, pendingStart: newValue) }
        }
    }

    /// ``Entry``'s extension fields, immutable (a change makes a new one), so that entries stay values.
    final class ExtensionState: Sendable {
        let fallback: (content: DisplayedContent, deadline: Int64)?
        let pendingStart: ExtensionStart?

        private init(fallback: (content: DisplayedContent, deadline: Int64)?, pendingStart: ExtensionStart?) {
            self.fallback = fallback
            self.pendingStart = pendingStart
        }

        /// nil when both are nil, decided before anything is allocated (every delivery clears `fallback`).
        static func make(
            fallback: (content: DisplayedContent, deadline: Int64)?, pendingStart: ExtensionStart?
        ) -> ExtensionState? {
            guard fallback != nil || pendingStart != nil else { return nil }
            return ExtensionState(fallback: fallback, pendingStart: pendingStart)
        }
    }
}
