// APNs Sandbox — the streaming body writer and chunked framing.
@testable import HTTP
import Synchronization
import Testing

@Suite struct HTTPBodyWriterTests {
    /// Writes before the connection attaches are kept and wake it once; later writes wake again only
    /// after the loop took what was there.
    @Test func coalescesWakeUps() {
        let writer = HTTPBodyWriter()
        let wakes = Atomic<Int>(0)
        #expect(writer.write(Array("a".utf8)))
        writer.attach { wakes.add(1, ordering: .relaxed) }
        #expect(wakes.load(ordering: .relaxed) == 1)
        writer.write(Array("b".utf8))
        #expect(wakes.load(ordering: .relaxed) == 1)
        let taken = writer.take()
        #expect(taken.bytes == Array("ab".utf8) && !taken.isFinished)
        writer.write(Array("c".utf8))
        #expect(wakes.load(ordering: .relaxed) == 2)
    }

    /// finish() ends the body after what is queued; writes after it are refused; close handlers run once.
    @Test func finishThenClose() {
        let writer = HTTPBodyWriter()
        let closes = Atomic<Int>(0)
        writer.onClose { closes.add(1, ordering: .relaxed) }
        writer.attach {}
        writer.write(Array("x".utf8))
        writer.finish()
        #expect(!writer.write(Array("y".utf8)))
        #expect(writer.isClosed)
        let taken = writer.take()
        #expect(taken.bytes == Array("x".utf8) && taken.isFinished)
        writer.close()
        writer.close()
        #expect(closes.load(ordering: .relaxed) == 1)
        writer.onClose { closes.add(1, ordering: .relaxed) }
        #expect(closes.load(ordering: .relaxed) == 2, "a handler added after the close runs at once")
    }

    /// A reader too slow for the buffer bound gets its stream finished after what was queued.
    @Test func overflowFinishesTheStream() {
        let writer = HTTPBodyWriter(maxBufferedBytes: 8)
        writer.attach {}
        #expect(writer.write(Array("12345".utf8)))
        #expect(!writer.write(Array("67890".utf8)))
        let taken = writer.take()
        #expect(taken.bytes == Array("12345".utf8) && taken.isFinished)
    }

    /// HTTP/1.1 streams are chunked; HTTP/1.0 ones are delimited by closing the connection.
    @Test func streamHeadAndChunks() {
        var buffer: [UInt8] = []
        let chunked = HTTP1ResponseWriter.writeStreamHead(
            HTTPResponse(status: 200, headers: ["content-type": "text/event-stream", "content-length": "5"]),
            version: .http1_1, keepAlive: true, into: &buffer)
        HTTP1ResponseWriter.appendChunk(Array("hello world".utf8), into: &buffer)
        HTTP1ResponseWriter.appendChunk([], into: &buffer)
        HTTP1ResponseWriter.appendLastChunk(into: &buffer)
        let text = String(decoding: buffer, as: UTF8.self)
        #expect(chunked)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"))
        #expect(!text.contains("content-length"))
        #expect(text.hasSuffix("\r\n\r\nb\r\nhello world\r\n0\r\n\r\n"))

        var old: [UInt8] = []
        let oldChunked = HTTP1ResponseWriter.writeStreamHead(
            HTTPResponse(status: 200), version: .http1_0, keepAlive: true, into: &old)
        #expect(!oldChunked)
        #expect(String(decoding: old, as: UTF8.self).contains("connection: close\r\n"))
    }
}
