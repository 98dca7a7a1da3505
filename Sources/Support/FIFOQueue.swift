// APNs Sandbox — a first-in, first-out queue with O(1) removal from the front.

/// A FIFO queue over an array: `popFirst()` moves a head index instead of shifting the elements
/// (`Array.removeFirst()` is O(n), which a long queue of waiters turns quadratic); the consumed prefix
/// is dropped once it is both large and most of the storage.
public struct FIFOQueue<Element> {
    private var storage: [Element] = []
    private var head = 0

    public init() {}

    public var count: Int { storage.count - head }
    public var isEmpty: Bool { head == storage.count }

    public mutating func append(_ element: Element) {
        storage.append(element)
    }

    public mutating func append(contentsOf elements: some Sequence<Element>) {
        storage.append(contentsOf: elements)
    }

    /// The oldest element, removed; nil when empty.
    public mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Every element, oldest first, leaving the queue empty.
    public mutating func removeAll() -> [Element] {
        defer {
            storage = []
            head = 0
        }
        return Array(storage[head...])
    }
}

extension FIFOQueue: Sendable where Element: Sendable {}
