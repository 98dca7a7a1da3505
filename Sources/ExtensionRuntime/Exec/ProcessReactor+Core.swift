// APNs Sandbox — the process reactor's shared state: watched processes and what callers asked for.
import CProcess
import Foundation
import Glibc
import Synchronization
import Support

extension ProcessReactor {
    /// The state the reactor thread serves; the facade holds it so that the thread can be stopped on `deinit`.
    final class Core: Sendable {
        struct Entry {
            var id: UInt64
            var pid: pid_t
            var stdin: Int32
            var stdout: Int32
            var stderr: Int32
            var registration: ProcessRegistry.Registration?
            var pending: [UInt8] = []
            var closeStdin = false
            var detached = false
            var limitBytes: Int
            var hasReportedMemory = false
            var handler: @Sendable (ProcessEvent) -> Void
        }

        struct State {
            var entries: [UInt64: Entry] = [:]
            var nextID: UInt64 = 1
            var isRunning = false
            var isStopped = false
            var checkSoon = false
        }

        let interval: Int
        let registry: ProcessRegistry?
        let state = Locked(State())
        let wake: (read: Int32, write: Int32)?

        init(interval: Int, registry: ProcessRegistry?) {
            self.interval = interval
            self.registry = registry
            if let pipe = try? Pipe.make() {
                setNonBlocking(pipe.read)
                setNonBlocking(pipe.write)
                wake = pipe
            } else {
                wake = nil
            }
        }

        var count: Int { state.withLock { $0.entries.count } }

        deinit {
            if let wake {
                Glibc.close(wake.read)
                Glibc.close(wake.write)
            }
        }

        func add(_ process: ChildProcess, limitBytes: Int, handler: @escaping @Sendable (ProcessEvent) -> Void)
            -> Handle
        {
            let (id, startThread) = state.withLock { state -> (UInt64, Bool) in
                let id = state.nextID
                state.nextID += 1
                state.entries[id] = Entry(
                    id: id, pid: process.pid, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr,
                    registration: process.registration, limitBytes: limitBytes, handler: handler)
                defer { state.isRunning = true }
                return (id, !state.isRunning)
            }
            if startThread {
                let thread = Thread { [self] in
                    CProcess_name_thread("nse-processes")
                    run()
                }
                thread.start()
            }
            signal()
            return Handle(id: id, pid: process.pid)
        }

        func update(_ id: UInt64, _ change: (inout Entry) -> Void) {
            state.withLock { state in
                if var entry = state.entries[id] {
                    change(&entry)
                    state.entries[id] = entry
                }
            }
            signal()
        }

        /// Signals the group only while the process is unreaped (under the lock that reaping takes): a
        /// zombie still holds its pid and group id, a reaped process's may already name another process.
        func kill(_ id: UInt64) {
            state.withLock { state in
                if let entry = state.entries[id] { ChildProcess.killGroup(entry.pid) }
                state.checkSoon = true
            }
            signal()
        }

        func stop() {
            state.withLock { state in
                state.isStopped = true
                for entry in state.entries.values { ChildProcess.killGroup(entry.pid) }
            }
            signal()
        }

        private func signal() {
            guard let wake else { return }
            var byte: UInt8 = 1
            _ = Glibc.write(wake.write, &byte, 1)
        }
    }
}
