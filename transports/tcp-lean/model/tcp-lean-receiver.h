/*
 * disaggsim: the receiving end of one lean TCP connection: cumulative ACKs, delayed ACKs,
 * SACK, DCTCP's ECN echo.
 */
#ifndef DISAGGSIM_TCP_LEAN_RECEIVER_H
#define DISAGGSIM_TCP_LEAN_RECEIVER_H

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/simple-ref-count.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace ns3
{

class TcpLeanHost;

/// Configuration every receiver of a run shares (TcpLeanFlowTransport's attributes).
struct TcpLeanReceiverConfig
{
    uint32_t mssBytes{1460};
    uint32_t delAckCount{2};              ///< RFC 1122 §4.2.3.2 / RFC 5681 §4.2
    Time delAckTimeout{MicroSeconds (1)}; ///< the `tcp-ns3` transport's DelAckTimeout
    bool dctcp{false};                    ///< echo CE per RFC 8257 §3.2
};

/**
 * \brief The receiving end of one flow's connection (doc/tcp-lean.md §3), acknowledging as
 * ns-3's TcpSocketBase::ReceivedData does:
 * - in-order data that leaves no gap: an ACK every DelAckCount segments, or DelAckTimeout
 *   after the first one not yet acknowledged (RFC 1122 §4.2.3.2, RFC 5681 §4.2), except
 *   the connection's first data segment, ACKed at once (ns-3.37 TcpSocketBase sets its
 *   delayed-ACK count to the maximum when the handshake completes, "Always respond to first
 *   data packet to speed up the connection"; Linux starts a connection in quick-ACK mode);
 * - out-of-order data, a duplicate, or data that fills a gap: an immediate ACK (RFC 5681
 *   §4.2), carrying the triggering segment as its first SACK block (RFC 2018 §4); the ACK
 *   is 40 B plus the SACK option of the receiver's out-of-order blocks (at most 4);
 * - the last byte of the flow: an immediate ACK (it stands for the ACK of the FIN that
 *   `tcp-ns3`'s sender puts on its last segment);
 * - DCTCP (RFC 8257 §3.2): ECE on every ACK equals the CE state of the last data segment;
 *   when that state changes with a delayed ACK pending, the pending ACK goes out at once
 *   with the old state.
 * The flow is received (FCT_RECORDS finish_ns) when every byte has arrived in order.
 */
class TcpLeanReceiver : public SimpleRefCount<TcpLeanReceiver>
{
  public:
    /// Called once, when every byte has arrived: flow id, time.
    using ReceivedCallback = std::function<void (uint64_t flowId, Time received)>;

    TcpLeanReceiver (const TcpLeanReceiverConfig& config, TcpLeanHost* host, uint64_t flowId,
                     uint16_t srcHost, uint64_t sizeBytes, uint32_t ackFlowHash,
                     ReceivedCallback received);
    ~TcpLeanReceiver ();

    /// A data segment at byte offset \p offset arrived at \p now; \p ce: it was CE-marked.
    void ReceiveData (uint32_t offset, bool ce, Time now);

    bool IsComplete () const
    {
        return m_cumSegment == m_nSegments;
    }

    uint64_t GetAcksSent () const
    {
        return m_acksSent;
    }

  private:
    bool Received (uint32_t segment) const
    {
        return (m_received[segment >> 6] >> (segment & 63)) & 1U;
    }

    void SendAck (bool ece, bool hasSack, uint32_t sackSegment, Time now);
    void OnDelAckTimeout ();

    const TcpLeanReceiverConfig& m_config;
    TcpLeanHost* m_host;
    uint64_t m_flowId;
    uint64_t m_sizeBytes;
    uint32_t m_nSegments;
    uint32_t m_ackFlowHash;
    uint16_t m_srcHost;
    bool m_ceState{false};
    bool m_quickAck{true}; ///< the connection's first data segment is ACKed at once
    uint32_t m_cumSegment{0};  ///< RCV.NXT in segments
    uint32_t m_oooBlocks{0};   ///< contiguous out-of-order blocks above RCV.NXT
    uint32_t m_unacked{0};     ///< in-order segments not yet acknowledged (delayed ACK)
    uint64_t m_acksSent{0};
    std::vector<uint64_t> m_received; ///< one bit per segment
    EventId m_delAckEvent;
    ReceivedCallback m_receivedCallback;
};

} // namespace ns3

#endif // DISAGGSIM_TCP_LEAN_RECEIVER_H
