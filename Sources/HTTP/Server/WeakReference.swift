// APNs Sandbox — a weak reference in a box.

/// Holds an object weakly, for closures that must not keep their owner alive.
final class WeakReference<Object: AnyObject> {
    weak var object: Object?

    init(_ object: Object) {
        self.object = object
    }
}
