/// The connections whose transfers libcurl 7.88 may have left holding answer bytes it will not deliver by itself, and
/// when to run them again (`TransferLoop`).
///
/// libcurl 7.88's HTTP/2 code (lib/http2.c) copies a stream's DATA into its transfer's receive buffer
/// (`CURLOPT_BUFFERSIZE`, 1 KiB here); what does not fit is held back and nghttp2 is paused
/// (`NGHTTP2_ERR_PAUSE`) until that transfer has taken it, 1 KiB per read. A read that hands over such held-back
/// bytes marks the transfer "drained" but sets no timer (`Curl_expire`), and the transfer's read loop goes on only
/// while `Curl_conn_data_pending` says the connection has more (its HTTP/2 check compares `nread_inbuf > inbuflen`,
/// never true, so only bytes unread in the socket or TLS count). When the bytes held back are the last the server
/// sent, as when END_STREAM rides on an answer's last DATA frame, nothing is unread, no socket event comes, and the
/// transfer, and every other stream of the connection while nghttp2 is paused, waits for the next bytes on that
/// connection or its own timeout. A busy connection soon brings more bytes, and each socket event runs all its
/// transfers again; a quiet one may bring none.
///
/// So a connection on which a run of libcurl delivered a full receive buffer (`FullBufferCount`: all it can hand over at
/// once, so perhaps not all it holds) is run again once it has been quiet for
/// `quietMilliseconds` (`curl_multi_socket_action` on its socket, as if readable), and again each round while that
/// delivers full buffers. A connection with socket events keeps being run by them and costs nothing more; one that goes
/// quiet after delivering costs one run of its transfers, plus one per KiB held back.
struct QuietConnectionChecks {
    /// A connection's socket under its multi handle's tag.
    struct Key: Hashable {
        var tag: Int32
        var socket: Int32
    }

    private struct Entry {
        /// When a run of libcurl on this connection last delivered a full buffer, in `monotonicMilliseconds()`.
        var delivered: Int64
        /// The loop round in which it last had a socket event.
        var eventRound: UInt64
    }

    /// How long a connection must go without socket events after delivering bytes before it is run again; 0: never.
    let quietMilliseconds: Int64
    private var entries: [Key: Entry] = [:]
    private var round: UInt64 = 0
    private var due: [Key] = []

    init(quietMilliseconds: Int) {
        // At most a minute: the deadline arithmetic (`delivered + quietMilliseconds`) stays far from overflow.
        self.quietMilliseconds = Int64(min(max(0, quietMilliseconds), 60_000))
    }

    var isEmpty: Bool { entries.isEmpty }

    /// Starts a round of the loop.
    mutating func startRound() {
        round &+= 1
    }

    /// A socket event on `key` was handed to libcurl; `delivered`: its run delivered a full buffer to some transfer.
    mutating func event(_ key: Key, delivered: Bool, now: Int64) {
        guard quietMilliseconds > 0 else { return }
        if delivered {
            entries[key] = Entry(delivered: now, eventRound: round)
        } else if let index = entries.index(forKey: key) {
            entries.values[index].eventRound = round
        }
    }

    /// A run of libcurl's timers on the multi handle tagged `tag` delivered a full buffer: to transfers on one of its
    /// connections that delivered lately, most likely (their transfers run by libcurl's timers after a socket event).
    mutating func timersDelivered(tag: Int32, now: Int64) {
        var index = entries.startIndex
        while index != entries.endIndex {
            let (key, entry) = entries[index]
            if key.tag == tag && now - entry.delivered < quietMilliseconds { entries.values[index].delivered = now }
            entries.formIndex(after: &index)
        }
    }

    /// The connections to run again now: quiet for `quietMilliseconds` since they last delivered, and without a
    /// socket event this round. Call `ran(_:delivered:now:)` for each.
    mutating func dueNow(_ now: Int64) -> [Key] {
        due.removeAll(keepingCapacity: true)
        for (key, entry) in entries where entry.eventRound != round && now - entry.delivered >= quietMilliseconds {
            due.append(key)
        }
        return due
    }

    /// `key` was run again; if that delivered a full buffer it is run again next round, else it is forgotten.
    mutating func ran(_ key: Key, delivered: Bool, now: Int64) {
        if delivered {
            entries[key]?.delivered = now - quietMilliseconds
        } else {
            entries[key] = nil
        }
    }

    /// How long the loop may wait for events before the next connection falls due; nil: none is waiting.
    func waitMilliseconds(now: Int64) -> Int64? {
        guard !entries.isEmpty else { return nil }
        var soonest = Int64.max
        for entry in entries.values { soonest = min(soonest, entry.delivered + quietMilliseconds - now) }
        return max(0, soonest)
    }
}

/// Full receive buffers (`Transfer.receiveBufferBytes`) libcurl has handed to the transport's write callback, counted
/// on the transport thread: whether a run of libcurl may have left answer bytes held back (`QuietConnectionChecks`).
/// A shorter chunk is the last of what libcurl had for that transfer, so answers smaller than the buffer, and the
/// ends of larger ones, cost no rerun.
final class FullBufferCount {
    var count = 0
}
