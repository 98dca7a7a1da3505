// APNs Sandbox — HTTP/1.1 streaming responses (Server-Sent Events): chunked, or until the connection closes.
import Support
import Transport

extension HTTP1ConnectionHandler {
    /// Starts sending a streaming response's body: the head now, the body whenever the writer wakes us.
    func beginStreaming(_ exchange: Exchange, writer: HTTPBodyWriter) {
        guard let response = exchange.response else { return }
        exchange.isStreaming = true
        exchange.isChunked = HTTP1ResponseWriter.writeStreamHead(
            response, version: exchange.request.version, keepAlive: exchange.keepAlive, into: &output)
        if !exchange.isChunked { lifecycle.lastRequestRead() }  // the body ends with the connection
        streaming = exchange
        flushOutput()
        if exchange.request.method == "HEAD" {
            writer.finish()
        }
        let bound = LoopBound(self, loop: connection.loop)
        writer.attach { bound.loop.execute { bound.value.reentering { $0.pumpStream() } } }
    }

    /// Sends what the streaming body has ready; ends the exchange when the producer has finished.
    func pumpStream() {
        guard let exchange = streaming, let writer = exchange.bodyWriter, !connection.isClosed else { return }
        // A slow reader: leave the bytes in the writer (it bounds them) until the socket drains; the
        // connection holds at most as much again.
        guard connection.pendingOutputBytes <= min(1 << 20, pipeline.options.streamBufferBytes) else {
            connection.notifyWhenDrained()
            return
        }
        let (bytes, isFinished) = writer.take()
        if exchange.request.method != "HEAD" {
            if exchange.isChunked {
                HTTP1ResponseWriter.appendChunk(bytes, into: &output)
            } else {
                output.append(contentsOf: bytes)
            }
        }
        guard isFinished else {
            flushOutput()
            return
        }
        streaming = nil
        if exchange.isChunked && exchange.request.method != "HEAD" {
            HTTP1ResponseWriter.appendLastChunk(into: &output)
        }
        writer.close()
        queue.removeFirst()
        lastRequestActivity = MonotonicClock.nanoseconds()
        if !exchange.isChunked || !exchange.keepAlive {
            queue.removeAll()
            queuedResponseBytes = 0
            flushOutput()
            connection.closeAfterFlush()
            return
        }
        writeReadyResponses()
        parse()
    }
}
