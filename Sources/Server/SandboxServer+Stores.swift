// APNs Sandbox — the main store and the webhook outbox of `storage.mode`: building them; for the durable mode's
// two database files, opening them at start (the integrity check, moving a damaged file aside, the size limit);
// their readiness.
import Foundation
import Store
import Support
import Webhooks

extension SandboxServer {
    /// The main store and the webhook outbox, built unopened, with the services that open and close them.
    struct Stores: Sendable {
        let store: any SandboxStore
        let outbox: any OutboxStore
        let storeService: ServiceStep
        let outboxService: ServiceStep
        /// The database files by name (`store`, `webhooks`): none in memory.
        let files: [(name: String, path: String)]
        /// The memory mode's journal (its counts for `/metrics`); nil when durable.
        let journal: MemoryStore?
        static let storeRole = "store"
        static let outboxRole = "webhook outbox"
    }

    /// The stores of `configuration.storage.mode`, not opened yet; health changes are logged.
    /// - Throws: ``StoreError`` for a path the durable store cannot use.
    static func makeStores(_ configuration: SandboxConfiguration, logger: Logger) throws -> Stores {
        let storage = configuration.storage
        let dataDirectory = configuration.dataDirectory
        switch storage.mode {
        case .durable:
            let storePath = storage.file.hasPrefix("/") ? storage.file : dataDirectory + "/" + storage.file
            let storeFile = StoreFile(
                role: Stores.storeRole, path: storePath, synchronous: storage.synchronous.sqlite,
                maxSizeBytes: storage.maxSizeBytes,
                emptyCheck: EmptyStoreCheck(storePath: storePath, dataDirectory: dataDirectory, outboxFileName: outboxFileName))
            let store = try makeStore(storeFile, settings: storage)
            logHealthChanges(of: store, role: storeFile.role, logger: logger)
            // The webhook outbox has a database file and a writer thread of its own, so its writes never
            // queue with pushes' commits. `normal` sync is enough: the events it is fed from are in the main
            // store (committed with their pushes), and a cursor or result lost with the machine's power is
            // fanned out or attempted again (at least once). The file has the main store's schema; only its
            // webhook tables are used.
            let outboxFile = StoreFile(
                role: Stores.outboxRole, path: dataDirectory + "/" + outboxFileName, synchronous: .normal,
                writerNiceness: WebhookDispatcher.niceness)
            let outbox = try makeStore(outboxFile, settings: storage)
            logHealthChanges(of: outbox, role: outboxFile.role, logger: logger)
            return Stores(
                store: store, outbox: outbox,
                storeService: service(for: store, as: storeFile, settings: storage, logger: logger),
                outboxService: service(for: outbox, as: outboxFile, settings: storage, logger: logger),
                files: [("store", storeFile.path), ("webhooks", outboxFile.path)], journal: nil)
        case .memory:
            let journal = storage.memory
            let store = MemoryStore(capacity: .init(notifications: journal.notifications, events: journal.events))
            let outbox = MemoryOutbox()
            let storeService = ServiceStep(Stores.storeRole, start: {
                try store.open()
                logger.warning(
                    "STORAGE IN MEMORY (storage.mode memory, the load-test mode): notifications, events, devices, apps "
                        + "and webhook deliveries are kept in memory only and LOST ON RESTART; the journal keeps the newest "
                        + "\(journal.notifications) notifications and \(journal.events) events and drops (and counts) older ones",
                    [("notifications", "\(journal.notifications)"), ("events", "\(journal.events)")])
            }, stop: { store.close() })
            return Stores(
                store: store, outbox: outbox, storeService: storeService,
                outboxService: ServiceStep(Stores.outboxRole, stop: { outbox.close() }), files: [], journal: store)
        }
    }

    /// One of the two database files: the main store or the webhook outbox.
    struct StoreFile: Sendable {
        /// How log lines and `/readyz` name it (`store`, `webhook outbox`).
        let role: String
        let path: String
        var synchronous: SQLiteStore.Synchronous = .full
        var writerNiceness: Int32 = 0
        /// `storage.maxSizeMB` in bytes for the main store, 0 for the outbox.
        var maxSizeBytes: Int64 = 0
        /// For the main store: an empty file beside other state is refused as a damaged one is.
        var emptyCheck: EmptyStoreCheck?
    }

    /// The store for `file`, not opened yet (``open(_:as:settings:logger:)`` opens it when the server starts).
    /// - Throws: ``StoreError`` for a path the store cannot use.
    static func makeStore(_ file: StoreFile, settings: StorageSettings) throws -> SQLiteStore {
        try SQLiteStore(
            path: file.path, synchronous: file.synchronous, writerNiceness: file.writerNiceness,
            integrityCheck: settings.integrity, maxSizeBytes: file.maxSizeBytes, opensImmediately: false)
    }

    /// Opens `store` (the database `file`) with the configured start-time integrity check
    /// (`storage.integrityCheck`, `storage.integrityCheckSeconds`) and logs what the check found.
    ///
    /// A damaged file (the check found problems, or SQLite calls it corrupt or not a database) is
    /// never served: with `storage.onCorruption` `refuse` this throws one error naming the file,
    /// quoting the findings and saying how to recover; with `moveAside` it renames the file (and its
    /// -wal, -shm) to `<name>.corrupt-<UTC time>`, logs that loudly, and opens a new empty store.
    /// An empty main store file beside other state (``EmptyStoreCheck``) is handled the same way, before
    /// SQLite opens it (which would delete its `-wal`). A failed open leaves no writer thread behind.
    /// - Throws: ``ConfigurationError`` for a damaged file (`refuse`), else the store's error.
    static func open(_ store: SQLiteStore, as file: StoreFile, settings: StorageSettings, logger: Logger) throws {
        if let check = file.emptyCheck, let state = check.stateBesideAnEmptyStore() {
            guard settings.onCorruption == .moveAside else { throw check.refusal(role: file.role, state: state) }
            let moved = try SQLiteStore.moveAside(path: file.path)
            logger.error(
                "EMPTY \(file.role.uppercased()) MOVED ASIDE: starting with an empty \(file.role) beside the state of the "
                    + "old one (storage.onCorruption = moveAside)",
                [("file", file.path), ("moved.to", moved), ("state", state.joined(separator: ", "))])
        }
        do {
            try store.open()
        } catch let error as StoreError where error.isCorruption {
            guard settings.onCorruption == .moveAside else {
                let name = (file.path as NSString).lastPathComponent
                throw ConfigurationError(
                    "\(file.role) \(error.message). The sandbox does not serve a damaged file; it was left as it is. "
                        + "To recover: restore \(name) from a backup; or salvage what is readable with "
                        + "`sqlite3 '\(file.path)' .recover | sqlite3 '\(file.path).recovered'` and put the result in its "
                        + "place; or set storage.onCorruption to \"moveAside\" to keep the damaged file as "
                        + "\(name).corrupt-<UTC time> and start with an empty \(file.role).")
            }
            let moved = try SQLiteStore.moveAside(path: file.path)
            logger.error(
                "DAMAGED \(file.role.uppercased()) MOVED ASIDE: starting with an empty \(file.role); "
                    + "what the damaged file held is not served (storage.onCorruption = moveAside)",
                [("file", file.path), ("moved.to", moved), ("found", error.message)])
            try store.open()
        }
        log(store.openingReport, of: file, settings: settings, logger: logger)
    }

    /// A service that opens `store` (``open(_:as:settings:logger:)``) and closes it.
    static func service(for store: SQLiteStore, as file: StoreFile, settings: StorageSettings, logger: Logger) -> ServiceStep {
        ServiceStep(
            file.role, start: { try open(store, as: file, settings: settings, logger: logger) },
            stop: { store.close() })
    }

    private static func log(_ report: SQLiteStore.OpeningReport, of file: StoreFile, settings: StorageSettings, logger: Logger) {
        let integrity = report.integrity
        let metadata = [
            ("file", file.path), ("check", integrity.mode.rawValue),
            ("seconds", String(format: "%.2f", integrity.seconds)),
            ("size.mb", String(format: "%.1f", Double(integrity.fileBytes) / 1_048_576)),
        ]
        switch integrity.outcome {
        case .passed:
            logger.info("\(file.role): integrity check passed", metadata)
        case .incomplete:
            logger.warning(
                "\(file.role): integrity check INCOMPLETE, storage.integrityCheckSeconds ran out; the rest of the file "
                    + "was not checked (damage there shows as errors and a not-ready /readyz when it is read). "
                    + "Raise storage.integrityCheckSeconds (0 = no limit) to check it all",
                metadata)
        case .skipped:
            logger.info("\(file.role): integrity check off (storage.integrityCheck)", [("file", file.path)])
        }
        if report.isAtSizeLimit, let maxPages = report.maxPageCount {
            logger.warning(
                "\(file.role) is already at its size limit: pushes that need more room fail (500) and /readyz is "
                    + "not-ready until records are deleted or storage.maxSizeMB is raised",
                [("file", file.path), ("size.mb", String(format: "%.1f", Double(report.pageCount * report.pageSize) / 1_048_576)),
                 ("limit.mb", String(format: "%.1f", Double(maxPages * report.pageSize) / 1_048_576))])
        }
    }

    /// Logs each change of `store`'s health (the readiness check is ``readinessReason(of:role:)``).
    static func logHealthChanges(of store: SQLiteStore, role: String, logger: Logger) {
        let path = store.path
        store.observeHealth { health in
            switch health {
            case .healthy:
                logger.notice("\(role): writes commit again; /readyz is ready", [("file", path)])
            case .failing(let reason):
                logger.error(
                    "\(role): writes fail; /readyz is not-ready until one commits (a probe retries every second)",
                    [("file", path), ("error", reason)])
            case .corrupt(let reason):
                logger.error(
                    "\(role): the database file is DAMAGED; /readyz is not-ready until a restart. Stop the server and "
                        + "recover the file (config/README.md, storage.onCorruption)",
                    [("file", path), ("error", reason)])
            }
        }
    }

    /// What `/readyz` says about the stores: `<role>: <SQLite's message>` while one is not healthy.
    static func readinessReasons(of stores: Stores) -> [@Sendable () -> String?] {
        let (store, outbox) = (stores.store, stores.outbox)
        return [
            { store.health.reason.map { "\(Stores.storeRole): \($0)" } },
            { outbox.health.reason.map { "\(Stores.outboxRole): \($0)" } },
        ]
    }
}
