// APNs Sandbox — a builtin extension: configured steps run in order inside one instance.
import HTTPClient
import Sandbox
import Synchronization
import Support

/// Runs an app's builtin steps for one notification (see ``BuiltinStep``).
///
/// ### Overview
/// Critical steps run first, then the others, each in configured order. Each step gets its own timeout
/// inside the budget. Steps never block a thread: CPU work (decrypt, localize, rewrite, checking a
/// download) runs on the instance's queue, waiting (a download, a `simulate` delay) is an ``HTTPClient``
/// transfer or a clock timer. When the last step finishes the content handler is called with the content
/// as the steps left it. `serviceExtensionTimeWillExpire` behaves as Apple's template: it hands over the
/// best attempt so far, unless a `simulate` behaviour says otherwise (`hang`, `never-call`).
///
/// ### Isolation
/// All state (the content being built, the current step, in-flight work) belongs to this driver, and one
/// driver serves one instance: nothing is shared between notifications.
final class BuiltinDriver: InstanceDriver {
    private let steps: [BuiltinStep]
    private let http: HTTPClient

    private struct State {
        var content: ExtensionContent
        var index = 0
        /// Identifies the running step; results of abandoned steps carry an older one.
        var generation: UInt64 = 0
        var stepStartedAt: UInt64 = 0
        /// The deadline of the `simulate` delay that ended the previous step: the next step starts from there,
        /// not from when its work ran, so a clock that jumps past several delays runs them all.
        var nextStepStartsAt: UInt64?
        var stepTimer: ScheduledTask?
        /// Cancels the running step's work (a download, a delay timer).
        var cancelWork: (@Sendable () -> Void)?
        var isHung = false
        var neverCalls = false
        var callsInExpire = false
        var callsTwice = false
        var removesAlert = false
    }

    private let state: Locked<State>

    /// Outcome of one step.
    enum StepResult: Sendable {
        case finished(String?)
        case failed(String)
    }

    init(steps: [BuiltinStep], request: ExtensionContent, http: HTTPClient) {
        self.steps = steps.filter(\.isCritical) + steps.filter { !$0.isCritical }
        self.http = http
        state = Locked(State(content: request))
    }

    // MARK: InstanceDriver

    func start(_ instance: Instance) {
        runStep(0, instance)
    }

    func timeWillExpire(_ instance: Instance) {
        let content = state.withLock { state -> ExtensionContent? in
            if state.isHung || state.neverCalls { return nil }
            return state.removesAlert ? Self.withoutAlert(state.content) : state.content
        }
        if let content { instance.contentHandlerCalled(content) }
    }

    func settle(_ instance: Instance, decision: InstanceStateMachine.Decision, done: @escaping @Sendable () -> Void) {
        let (timer, cancel) = state.withLock { state in
            defer {
                state.generation &+= 1
                state.stepTimer = nil
                state.cancelWork = nil
            }
            return (state.stepTimer, state.cancelWork)
        }
        timer?.cancel()
        cancel?()
        done()
    }

    // MARK: Steps

    private func runStep(_ index: Int, _ instance: Instance) {
        guard !instance.isDecided else { return }
        guard index < steps.count else {
            pipelineFinished(instance)
            return
        }
        let step = steps[index]
        let now = instance.clock.monotonicNanoseconds
        let (generation, startedAt) = state.withLock { state -> (UInt64, UInt64) in
            state.index = index
            state.generation &+= 1
            state.stepStartedAt = min(state.nextStepStartsAt ?? now, now)
            state.nextStepStartsAt = nil
            return (state.generation, state.stepStartedAt)
        }
        instance.note(.stepStarted, step.action.name + (step.isCritical ? " (critical)" : ""), at: startedAt)
        if let timeout = step.timeoutMilliseconds {
            let timer = instance.clock.schedule(atMonotonicNanoseconds: startedAt + Self.nanoseconds(timeout)) { [self] in
                instance.queue.async { self.stepTimedOut(generation, after: timeout, instance) }
            }
            let keep = state.withLock { state -> Bool in
                guard state.generation == generation else { return false }
                state.stepTimer = timer
                return true
            }
            if !keep { timer.cancel() }
        }
        let complete: @Sendable (StepResult) -> Void = { [self] result in
            instance.queue.async { self.stepCompleted(generation, result, instance) }
        }
        switch step.action {
        case .decrypt(let field):
            stepCompleted(generation, transformContent { content in
                try Self.decrypt(&content, field: field, key: instance.context.device.keys[instance.context.app.bundleID],
                                 bundleID: instance.context.app.bundleID)
            }, instance)
        case .localize:
            stepCompleted(generation, transformContent { content in
                Self.localize(&content, strings: instance.context.app.strings, locale: instance.context.device.locale)
            }, instance)
        case .rewrite(let title, let subtitle, let body):
            stepCompleted(generation, transformContent { content in
                Self.rewrite(&content, title: title, subtitle: subtitle, body: body)
            }, instance)
        case .attachMedia(let fields, let identifier):
            attachMedia(fields: fields, identifier: identifier, step: step, generation: generation, instance,
                        complete: complete)
        case .simulate(let delay, let behavior):
            simulate(delay: delay, behavior: behavior, from: startedAt, generation: generation, instance,
                     complete: complete)
        }
    }

    /// Runs a synchronous step on the content being built.
    private func transformContent(_ body: (inout ExtensionContent) throws -> String?) -> StepResult {
        var content = state.withLock { $0.content }
        do {
            let detail = try body(&content)
            state.withLock { $0.content = content }
            return .finished(detail)
        } catch {
            return .failed("\(error)")
        }
    }

    private func stepCompleted(_ generation: UInt64, _ result: StepResult, _ instance: Instance) {
        let current = state.withLock { state -> (index: Int, timer: ScheduledTask?, started: UInt64)? in
            guard state.generation == generation else { return nil }
            defer {
                state.stepTimer = nil
                state.cancelWork = nil
            }
            return (state.index, state.stepTimer, state.stepStartedAt)
        }
        guard let current, !instance.isDecided else { return }
        current.timer?.cancel()
        let step = steps[current.index]
        let elapsed = (instance.clock.monotonicNanoseconds &- current.started) / 1_000_000
        switch result {
        case .finished(let detail):
            instance.note(.stepFinished, "\(step.action.name) in \(elapsed) ms" + (detail.map { ": \($0)" } ?? ""))
            runStep(current.index + 1, instance)
        case .failed(let reason):
            stepFailed(step, index: current.index, reason: reason, instance)
        }
    }

    private func stepTimedOut(_ generation: UInt64, after timeout: Int64, _ instance: Instance) {
        let current = state.withLock { state -> (index: Int, cancel: (@Sendable () -> Void)?)? in
            guard state.generation == generation else { return nil }
            defer {
                state.generation &+= 1
                state.stepTimer = nil
                state.cancelWork = nil
                state.isHung = false
            }
            return (state.index, state.cancelWork)
        }
        guard let current, !instance.isDecided else { return }
        current.cancel?()
        stepFailed(steps[current.index], index: current.index, reason: "timed out after \(timeout) ms", instance)
    }

    private func stepFailed(_ step: BuiltinStep, index: Int, reason: String, _ instance: Instance) {
        if step.isCritical {
            instance.note(.stepFailed, "\(step.action.name): \(reason); critical, the original is shown")
            instance.fail(.error("critical step \(step.action.name) failed: \(reason)"))
        } else {
            instance.note(.stepFailed, "\(step.action.name): \(reason); continuing")
            runStep(index + 1, instance)
        }
    }

    /// After the last step: the content handler, as the simulated behaviours allow.
    private func pipelineFinished(_ instance: Instance) {
        let (content, calls, twice) = state.withLock { state -> (ExtensionContent, Bool, Bool) in
            let content = state.removesAlert ? Self.withoutAlert(state.content) : state.content
            return (content, !state.neverCalls && !state.callsInExpire, state.callsTwice)
        }
        guard calls else { return }
        instance.contentHandlerCalled(content)
        if twice { instance.contentHandlerCalled(content) }
    }

    // MARK: Waiting steps

    private func attachMedia(
        fields: [String], identifier: String, step: BuiltinStep, generation: UInt64, _ instance: Instance,
        complete: @escaping @Sendable (StepResult) -> Void
    ) {
        let userInfo = state.withLock { $0.content.userInfo }
        guard let (field, url) = fields.lazy.compactMap({ field in userInfo[field]?.string.map { (field, $0) } }).first
        else {
            complete(.finished("no \(fields.joined(separator: " or ")) in the payload; nothing to attach"))
            return
        }
        let directory: String
        do {
            directory = try instance.temporaryDirectory()
        } catch {
            complete(.failed("no temporary directory: \(error)"))
            return
        }
        let path = directory + "/" + FileSystem.safeComponent(identifier) + ".download"
        let timeout = step.timeoutMilliseconds ?? instance.context.budgetMilliseconds + instance.context.graceMilliseconds
        let request = ExtensionHTTP.request(
            url: url, timeoutMilliseconds: timeout, maxBytes: MediaType.Kind.video.maxBytes, into: .file(path))
        let handle = http.send(request) { [self] result in
            // Off the client's transfer thread before the file is looked at.
            instance.queue.async {
                self.downloaded(result, field: field, url: url, path: path, identifier: identifier,
                                generation: generation, complete: complete)
            }
        }
        setCancelWork(generation) { handle.cancel() }
    }

    /// On the instance's queue: checks what `attachMedia` downloaded to `path` and attaches it.
    private func downloaded(
        _ result: Result<HTTPClient.Response, HTTPClient.Failure>, field: String, url: String, path: String,
        identifier: String, generation: UInt64, complete: @escaping @Sendable (StepResult) -> Void
    ) {
        switch result {
        case .failure(let failure):
            complete(.failed("downloading \(field) \(url): \(failure)"))
        case .success(let response) where !(200..<300).contains(response.status):
            complete(.failed("downloading \(field) \(url): HTTP \(response.status)"))
        case .success(let response):
            guard let header = FileSystem.readPrefix(path, count: MediaType.headerLength),
                let type = MediaType.sniff(header)
            else {
                FileSystem.removeTree(path)
                complete(.failed("\(url) is not a supported media type (by content)"))
                return
            }
            guard response.byteCount <= type.kind.maxBytes else {
                FileSystem.removeTree(path)
                complete(.failed("\(url): \(type.mimeType) of \(response.byteCount) bytes is over the "
                                 + "\(type.kind.rawValue) limit of \(type.kind.maxBytes) bytes"))
                return
            }
            state.withLock { state in
                guard state.generation == generation else { return }
                state.content.attachments.append(
                    ExtensionContent.AttachmentRequest(identifier: identifier, location: path, typeHint: nil))
            }
            complete(.finished("\(type.mimeType), \(response.byteCount) bytes from \(url)"))
        }
    }

    private func simulate(
        delay: Int64, behavior: SimulatedBehavior?, from startedAt: UInt64, generation: UInt64, _ instance: Instance,
        complete: @escaping @Sendable (StepResult) -> Void
    ) {
        guard delay > 0 else {
            behave(behavior, generation: generation, instance, complete: complete)
            return
        }
        let deadline = startedAt + Self.nanoseconds(delay)
        let timer = instance.clock.schedule(atMonotonicNanoseconds: deadline) { [self] in
            instance.queue.async {
                let current = self.state.withLock { state -> Bool in
                    guard state.generation == generation else { return false }
                    state.nextStepStartsAt = deadline
                    return true
                }
                guard current else { return }
                self.behave(behavior, generation: generation, instance, complete: complete)
            }
        }
        setCancelWork(generation) { timer.cancel() }
    }

    private func behave(
        _ behavior: SimulatedBehavior?, generation: UInt64, _ instance: Instance,
        complete: @escaping @Sendable (StepResult) -> Void
    ) {
        let limit = instance.context.configuration.memoryLimitMB
        switch behavior {
        case nil:
            complete(.finished(nil))
        case .hang:
            state.withLock { if $0.generation == generation { $0.isHung = true } }
        case .crash:
            instance.fail(.crash("simulated crash (EXC_BAD_ACCESS)"))
        case .exceedMemory:
            instance.fail(.crash("simulated: resident memory went over the \(limit) MiB limit; killed "
                                 + "without timeWillExpire"), as: .memoryExceeded)
        case .error:
            instance.fail(.error("simulated error"))
        case .neverCall:
            state.withLock { $0.neverCalls = true }
            complete(.finished("the content handler will not be called"))
        case .callTwice:
            state.withLock { $0.callsTwice = true }
            complete(.finished("the content handler will be called twice"))
        case .removeAlert:
            state.withLock { $0.removesAlert = true }
            complete(.finished("the alert text will be removed"))
        case .callInExpire:
            state.withLock { $0.callsInExpire = true }
            complete(.finished("the content handler will be called in timeWillExpire"))
        }
    }

    private func setCancelWork(_ generation: UInt64, _ cancel: @escaping @Sendable () -> Void) {
        let stale = state.withLock { state -> Bool in
            guard state.generation == generation else { return true }
            state.cancelWork = cancel
            return false
        }
        if stale { cancel() }
    }

    private static func nanoseconds(_ milliseconds: Int64) -> UInt64 {
        UInt64(clamping: max(0, milliseconds)) &* 1_000_000
    }

    static func withoutAlert(_ content: ExtensionContent) -> ExtensionContent {
        var stripped = content
        stripped.title = nil
        stripped.subtitle = nil
        stripped.body = nil
        return stripped
    }
}
