/*
 * disaggsim: the receiving side of a RoCE RC queue pair (the responder of a WRITE, the
 * requester of a READ): in-order delivery, ACK/NACK, DCQCN's notification point.
 */
#ifndef DISAGGSIM_ROCE_RECEIVER_H
#define DISAGGSIM_ROCE_RECEIVER_H

#include "topologies/model/int-tag.h"

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/packet.h"
#include "ns3/traced-callback.h"

namespace ns3
{

class RoceHost;

/**
 * \brief Receives one message in order (RC: an out-of-order packet is dropped, IBA
 * §9.7.5.1.1) and answers:
 * - ACK of the next expected byte each time it reaches or passes the next multiple of
 *   AckIntervalPackets x MSS bytes, and always for the message's last byte.  The next
 *   milestone moves only when an ACK goes out (HPCC's simulator resets it on every packet,
 *   rdma-hw.cc ReceiveUdp m_milestone_rx = m_ack_interval, so its interval only holds for
 *   the first ACK: High-Precision-Congestion-Control issue #65);
 * - a duplicate (already received) packet is answered by an ACK of the next expected byte
 *   (IBA §9.7.5.1.3: duplicates are acknowledged), so a lost ACK is repaired;
 * - NACK of the expected byte on a packet past it (sequence error: the sender goes back N),
 *   once per gap, repeated at most every NackInterval while the gap stays (HPCC's
 *   simulator ReceiverCheckSeq);
 * - for DCQCN (Zhu et al. SIGCOMM'15 §3.2, the notification point): a CNP when a CE-marked
 *   packet arrives and no CNP went to this QP in the last CnpInterval (50 us).
 * ACKs echo the INT records of the data packet they answer (HPCC).
 */
class RoceReceiver : public Object
{
  public:
    static TypeId GetTypeId ();
    RoceReceiver ();
    ~RoceReceiver () override;

    /// Receive flow \p flowId of \p sizeBytes from \p srcHost on \p host; \p mssBytes sets
    /// the ACK interval in bytes; \p echoIntBytes is the INT header size ACKs carry (0: none).
    void Setup (Ptr<RoceHost> host, uint64_t flowId, uint16_t srcHost, uint64_t sizeBytes,
                uint32_t mssBytes, uint32_t echoIntBytes);

    /// A data packet: \p seq, \p payloadBytes, CE mark \p ce, the key of its INT records
    /// \p intKey (IntFrameKey).
    void ReceiveData (uint64_t seq, uint32_t payloadBytes, bool ce, uint32_t intKey, Time now);

    /// Send the RDMA READ request of the flow to its data source.
    void SendReadRequest (Time now);

    /// \returns the ACK interval in bytes (AckIntervalPackets x MSS).
    uint64_t GetAckIntervalBytes () const
    {
        return m_ackIntervalBytes;
    }

    uint64_t GetAcksSent () const
    {
        return m_acks;
    }

    uint64_t GetNacksSent () const
    {
        return m_nacks;
    }

    uint64_t GetCnpsSent () const
    {
        return m_cnps;
    }

    /// Signature of FlowReceived: flow id and the time the last byte arrived.
    typedef void (*FlowReceivedCallback) (uint64_t flowId, Time received);

  protected:
    void DoDispose () override;

  private:
    /// An ACK (or NACK) of m_expected, echoing the records of the data packet it answers.
    void SendAck (bool nack, Time now);

    uint32_t m_ackIntervalPackets{1};
    Time m_nackInterval;
    Time m_cnpInterval;

    Ptr<RoceHost> m_host;
    uint64_t m_flowId{0};
    uint16_t m_srcHost{0};
    uint64_t m_sizeBytes{0};
    uint64_t m_ackIntervalBytes{0};
    uint32_t m_echoIntBytes{0};
    uint64_t m_expected{0};
    uint64_t m_nextAckAt{0};
    uint64_t m_lastNackSeq{UINT64_MAX};
    Time m_nackAllowedAt;
    bool m_cnpSent{false};
    Time m_lastCnp;
    bool m_complete{false};
    uint64_t m_acks{0};
    uint64_t m_nacks{0};
    uint64_t m_cnps{0};
    uint32_t m_dataKey{0}; //!< IntFrameKey of the data packet being answered
    bool m_haveDataRecords{false}; //!< its records wait in IntRecords to be echoed
    TracedCallback<uint64_t, Time> m_flowReceived;
};

} // namespace ns3

#endif // DISAGGSIM_ROCE_RECEIVER_H
