import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for download tests: POSIX sockets, one thread per
/// connection, `Connection: close` after every response. Each test gives a handler that decides
/// the response (status, headers, body) and how it is sent (delays, dropping the connection).
///
/// Bounded: the server stops by itself after `lifetime` seconds (or `stop()`), connections read
/// with a timeout, delays are capped by the lifetime. Writes never raise SIGPIPE (MSG_NOSIGNAL).
final class TestHTTPServer: @unchecked Sendable {
    struct Request: Sendable {
        let method: String
        let path: String
        /// Header names lowercased.
        let headers: [String: String]
        /// 0 for the first request the server saw.
        let index: Int
    }

    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)] = []
        var body: Data = Data()
        /// Sends `Content-Length` (default); false: the body ends when the connection closes.
        var sendsContentLength = true
        /// Closes the connection after this many body bytes.
        var dropAfterBodyBytes: Int?
        /// Waits this long before the status line.
        var delayBeforeHeaders: TimeInterval = 0
        /// Waits this long between the headers and the body.
        var delayBeforeBody: TimeInterval = 0
        /// Sends the body in chunks of this size with `chunkDelay` between them.
        var chunkSize = 64 * 1024
        var chunkDelay: TimeInterval = 0
    }

    typealias Handler = @Sendable (Request) -> Response

    let port: UInt16
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    func url(_ path: String) -> URL { baseURL.appendingPathComponent(path) }

    private let listenFD: Int32
    private let handler: Handler
    private let deadline: Date
    private let lock = NSLock()
    private var _requests: [Request] = []
    private var _bodyBytesSent = 0
    private var stopped = false
    private let acceptDone = DispatchSemaphore(value: 0)

    /// Every request seen so far, in arrival order.
    var requests: [Request] { lock.lock(); defer { lock.unlock() }; return _requests }
    /// Body bytes written to sockets so far (all responses).
    var bodyBytesSent: Int { lock.lock(); defer { lock.unlock() }; return _bodyBytesSent }

    init(lifetime: TimeInterval = 30, handler: @escaping Handler) throws {
        self.handler = handler
        deadline = Date().addingTimeInterval(lifetime)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestServerError("socket() failed: \(errno)") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw TestServerError("bind/listen on 127.0.0.1 failed: \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listenFD = fd
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "TestHTTPServer.accept"
        thread.start()
    }

    /// Stops accepting and waits (bounded) for the accept loop to end.
    func stop() {
        lock.lock()
        let wasStopped = stopped
        stopped = true
        lock.unlock()
        if !wasStopped { _ = acceptDone.wait(timeout: .now() + 2) }
    }

    deinit { stop() }

    private var isStopped: Bool {
        lock.lock(); defer { lock.unlock() }
        return stopped || Date() > deadline
    }

    private func acceptLoop() {
        defer {
            close(listenFD)
            acceptDone.signal()
        }
        while !isStopped {
            var descriptor = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 50)
            guard ready > 0 else { continue }
            let connection = accept(listenFD, nil, nil)
            guard connection >= 0 else { continue }
            let thread = Thread { [self] in serve(connection) }
            thread.name = "TestHTTPServer.connection"
            thread.start()
        }
    }

    /// Sleeps up to `seconds`, in steps, returning early when the server stops.
    private func pause(_ seconds: TimeInterval) {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end, !isStopped { usleep(10_000) }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // Read the request head (bounded at 64 KiB).
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let terminator: [UInt8] = [13, 10, 13, 10]
        while head.count < 65536 {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            head += buffer[0..<count]
            if head.count >= 4, head.indices.dropLast(3).contains(where: { Array(head[$0..<$0 + 4]) == terminator }) { break }
        }
        let text = String(decoding: head, as: UTF8.self)
        let lines = text.components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2 else { return }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        lock.lock()
        let request = Request(method: String(parts[0]), path: String(parts[1]), headers: headers, index: _requests.count)
        _requests.append(request)
        lock.unlock()

        let response = handler(request)
        pause(response.delayBeforeHeaders)
        var out = "HTTP/1.1 \(response.status) \(TestHTTPServer.reason(response.status))\r\nConnection: close\r\n"
        for (name, value) in response.headers { out += "\(name): \(value)\r\n" }
        if response.sendsContentLength { out += "Content-Length: \(response.body.count)\r\n" }
        out += "\r\n"
        guard write(connection, Array(out.utf8)) else { return }
        guard request.method != "HEAD", !response.body.isEmpty else { return }
        pause(response.delayBeforeBody)
        let limit = min(response.dropAfterBodyBytes ?? response.body.count, response.body.count)
        var offset = 0
        while offset < limit, !isStopped {
            let end = min(offset + max(1, response.chunkSize), limit)
            guard write(connection, Array(response.body[response.body.startIndex + offset ..< response.body.startIndex + end])) else { return }
            lock.lock()
            _bodyBytesSent += end - offset
            lock.unlock()
            offset = end
            if offset < limit, response.chunkDelay > 0 { pause(response.chunkDelay) }
        }
        if response.dropAfterBodyBytes != nil {
            // Abort: make the client see the connection end before the announced length.
            shutdown(connection, Int32(SHUT_RDWR))
        }
    }

    private func write(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 206: return "Partial Content"
        case 304: return "Not Modified"
        case 404: return "Not Found"
        case 416: return "Range Not Satisfiable"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status"
        }
    }
}

struct TestServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A file served with validators, replaceable during a test (a "new version on the server").
final class ServedFile: @unchecked Sendable {
    private let lock = NSLock()
    private var _body: Data
    private var _etag: String
    private var _lastModified: String

    init(_ body: Data, etag: String, lastModified: String = "Sun, 01 Nov 2026 10:00:00 GMT") {
        _body = body
        _etag = etag
        _lastModified = lastModified
    }

    var body: Data { lock.lock(); defer { lock.unlock() }; return _body }
    var etag: String { lock.lock(); defer { lock.unlock() }; return _etag }

    func replace(with body: Data, etag: String, lastModified: String) {
        lock.lock()
        _body = body
        _etag = etag
        _lastModified = lastModified
        lock.unlock()
    }

    /// A correct response: 304 for a matching `If-None-Match` / `If-Modified-Since`, 206 for a
    /// `Range` whose `If-Range` matches (or is absent), else 200 with the whole file.
    func respond(to request: TestHTTPServer.Request) -> TestHTTPServer.Response {
        lock.lock()
        let (body, etag, lastModified) = (_body, _etag, _lastModified)
        lock.unlock()
        let validators = [("ETag", etag), ("Last-Modified", lastModified)]
        if let match = request.headers["if-none-match"] {
            if match == etag { return .init(status: 304, headers: validators) }
        } else if let since = request.headers["if-modified-since"], since == lastModified {
            return .init(status: 304, headers: validators)
        }
        if let range = request.headers["range"], range.hasPrefix("bytes="), range.hasSuffix("-"),
           let start = Int(range.dropFirst(6).dropLast()) {
            let ifRange = request.headers["if-range"]
            if ifRange == nil || ifRange == etag || ifRange == lastModified {
                guard start < body.count else {
                    return .init(status: 416, headers: [("Content-Range", "bytes */\(body.count)")])
                }
                return .init(status: 206, headers: validators + [("Content-Range", "bytes \(start)-\(body.count - 1)/\(body.count)")],
                             body: body.subdata(in: start..<body.count))
            }
        }
        return .init(status: 200, headers: validators + [("Content-Type", "application/octet-stream")], body: body)
    }
}
