import Dispatch
import Foundation

/// Running-mode and timestamp bookkeeping shared by MediaPipe-style tasks, and the live-stream
/// flow limiter: at most one frame in flight and only the newest waiting frame kept (MediaPipe's
/// FlowLimiterCalculator with max_in_flight = 1, max_in_queue = 1). Results are delivered in
/// timestamp order on a private serial queue.
public final class LiveStreamScheduler<Frame: Sendable, Output: Sendable>: @unchecked Sendable {
    /// Processes one frame with its timestamp (on a private serial queue).
    public typealias Work = @Sendable (Frame, Int) throws -> Output
    /// Called with the result (or error) of each processed frame, in timestamp order.
    public typealias Delivery = @Sendable (Result<Output, Error>, Int) -> Void
    /// Called with the timestamp of each frame that was dropped because a newer one replaced it.
    public typealias DropHandler = @Sendable (Int) -> Void

    private let lock = NSLock()
    private var inFlight = false
    private var pending: (frame: Frame, timestamp: Int)?
    private let work: Work
    private let deliver: Delivery
    private let dropped: DropHandler
    private let workQueue = DispatchQueue(label: "edgevision.livestream.work")
    /// The serial queue results are delivered on.
    public let deliveryQueue = DispatchQueue(label: "edgevision.livestream.delivery")
    private let group = DispatchGroup()

    /// A scheduler running `work` on accepted frames, passing results to `deliver` and dropped timestamps to `dropped`.
    public init(work: @escaping Work, deliver: @escaping Delivery, dropped: @escaping DropHandler) {
        self.work = work
        self.deliver = deliver
        self.dropped = dropped
    }

    /// Accepts a frame: processed now if nothing is in flight, else kept as the one waiting frame
    /// (replacing, and dropping, an older waiting frame).
    public func submit(_ frame: Frame, timestamp: Int) {
        lock.lock()
        if inFlight {
            let replaced = pending?.timestamp
            pending = (frame, timestamp)
            lock.unlock()
            if let replaced { deliveryQueue.async(group: group) { self.dropped(replaced) } }
            return
        }
        inFlight = true
        lock.unlock()
        start(frame, timestamp)
    }

    private func start(_ frame: Frame, _ timestamp: Int) {
        group.enter()
        workQueue.async {
            let result = Result { try self.work(frame, timestamp) }
            self.deliveryQueue.async(group: self.group) { self.deliver(result, timestamp) }
            self.lock.lock()
            if let next = self.pending {
                self.pending = nil
                self.lock.unlock()
                self.start(next.frame, next.timestamp)
            } else {
                self.inFlight = false
                self.lock.unlock()
            }
            self.group.leave()
        }
    }

    /// Blocks until every accepted frame has been processed and delivered.
    public func waitUntilIdle() {
        while true {
            group.wait()
            lock.lock()
            let busy = inFlight || pending != nil
            lock.unlock()
            if !busy { return }
        }
    }
}

/// Checks MediaPipe's running-mode and timestamp rules.
public final class TimestampValidator: @unchecked Sendable {
    private let lock = NSLock()
    private var last: Int?

    /// A validator that has seen no timestamp yet.
    public init() {}

    /// Throws MediaPipe's error unless `timestamp` is strictly greater than every earlier one.
    public func accept(_ timestamp: Int) throws {
        lock.lock()
        defer { lock.unlock() }
        if let last, timestamp <= last {
            throw VisionError(.invalidCall, "Input timestamp must be monotonically increasing.")
        }
        last = timestamp
    }
}
