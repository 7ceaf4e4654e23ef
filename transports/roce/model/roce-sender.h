/*
 * disaggsim: the sending side of a RoCE RC queue pair (one message: RDMA WRITE data, or the
 * responses of an RDMA READ).
 */
#ifndef DISAGGSIM_ROCE_SENDER_H
#define DISAGGSIM_ROCE_SENDER_H

#include "roce-cc.h"

#include "topologies/model/fabric-header.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/packet.h"
#include "ns3/traced-callback.h"

#include <limits>

namespace ns3
{

class IntTag;
class RoceHost;

/**
 * \brief The data sender of one queue pair: segments the message at MssBytes, paces packets
 * at the QP's rate (the next packet may start TxTime(its wire bytes at the rate) after the
 * previous one was handed to the NIC; at line rate the NIC's serialization paces), keeps at most the window of unacknowledged payload,
 * and recovers by go-back-N (IBA §9.7.5.1.1 sequence error NAK; HPCC's simulator
 * RdmaHw::RecoverQueue): a NACK or the retransmission timeout Rto sets snd_nxt back to
 * snd_una.  The Rto restarts whenever an ACK moves snd_una.
 *
 * The host's NIC scheduler (RoceHost) asks IsEligible and calls SendNext; a congestion
 * control (RoceCongestionControl) sets the rate and window.
 */
class RoceSender : public Object, public RoceRateTarget
{
  public:
    static TypeId GetTypeId ();
    RoceSender ();
    ~RoceSender () override;

    /// Prepare the QP of flow \p flowId: \p sizeBytes to \p dstHost from \p host, at most
    /// \p mssBytes per packet; \p cc (owned) controls it; \p lineRateBps and \p baseRtt
    /// start it; \p minWindowBytes is the least window (one ACK interval, RoceReceiver).
    void Setup (Ptr<RoceHost> host, uint64_t flowId, uint16_t dstHost, uint64_t sizeBytes,
                uint32_t mssBytes, Ptr<RoceCongestionControl> cc, uint64_t lineRateBps,
                Time baseRtt, uint64_t minWindowBytes);
    /// Set the retransmission timeout (the transport resolves a 0 Rto attribute).
    void SetRto (Time rto)
    {
        m_rto = rto;
    }

    Time GetRto () const
    {
        return m_rto;
    }

    /// Begin sending (WRITE: at the flow's start; READ: when the request arrives).
    void Start ();

    /// \returns true if a data packet may be handed to the NIC at \p now.
    bool IsEligible (Time now) const
    {
        return HasWindow () && m_nextAvail <= now;
    }

    /// \returns true if data is left and the window allows another packet (rate aside).
    bool HasWindow () const
    {
        return m_sndNxt < m_sizeBytes && m_sndNxt - m_sndUna < m_windowBytes;
    }

    /// \returns the earliest time the pacer lets the next packet go.
    Time GetNextAvail () const
    {
        return m_nextAvail;
    }

    /// Build the next data packet and hand it to the NIC at \p now.
    void SendNext (Time now);
    /// Build the next data packet at \p now into \p packet and \p frame (the QP's state
    /// moves as if it was sent); the caller puts it on the NIC.
    void BuildNext (Time now, Ptr<Packet>& packet, FabricHeader& frame);

    /// An ACK (or NACK if \p nack) for cumulative byte \p ackSeq arrived with \p records.
    void ReceiveAck (uint64_t ackSeq, bool nack, const IntTag* records, Time now);
    /// A CNP arrived.
    void ReceiveCnp (Time now);

    // RoceRateTarget
    void SetRateBps (uint64_t bitRate) override;
    void SetWindowBytes (uint64_t bytes) override;
    uint64_t GetSndNxt () const override
    {
        return m_sndNxt;
    }

    uint64_t GetRateBps () const
    {
        return m_rateBps;
    }

    Ptr<RoceCongestionControl> GetCongestionControl () const
    {
        return m_cc;
    }

    uint64_t GetDataPacketsSent () const
    {
        return m_dataPacketsSent;
    }

    /// \returns data packets sent again (go-back-N after a NACK or timeout).
    uint64_t GetRetransmittedPackets () const
    {
        return m_retransmitted;
    }

    uint64_t GetTimeouts () const
    {
        return m_timeouts;
    }

    uint64_t GetNacks () const
    {
        return m_nacks;
    }

    /// The host's scheduler lists this QP (RoceHost keeps it; saves a search per ACK).
    bool IsScheduled () const
    {
        return m_scheduled;
    }

    void SetScheduled (bool scheduled)
    {
        m_scheduled = scheduled;
    }

    /// Signature of FlowAcked: flow id and the time the last byte was acknowledged.
    typedef void (*FlowAckedCallback) (uint64_t flowId, Time acked);

  protected:
    void DoDispose () override;

  private:
    void RestartRto (Time now);
    void RtoExpired ();
    /// snd_nxt back to snd_una (go-back-N).
    void GoBack ();

    Time m_rto;

    Ptr<RoceHost> m_host;
    Ptr<RoceCongestionControl> m_cc;
    uint64_t m_flowId{0};
    uint16_t m_dstHost{0};
    uint64_t m_sizeBytes{0};
    uint32_t m_mssBytes{0};
    uint64_t m_lineRateBps{0};
    uint64_t m_rateBps{0};
    uint64_t m_windowBytes{std::numeric_limits<uint64_t>::max ()};
    uint64_t m_minWindowBytes{0};
    uint64_t m_sndNxt{0};
    uint64_t m_sndUna{0};
    uint64_t m_highestSent{0}; //!< bytes below were sent at least once
    Time m_nextAvail;
    Time m_baseRtt;
    bool m_ecn{false};
    bool m_int{false};
    bool m_done{false};
    bool m_scheduled{false};
    EventId m_rtoEvent;
    /// m_rtoEvent is scheduled and has not run nor been cancelled (its IsRunning, kept here:
    /// asking the simulator cost 1.3 % of roce-dcqcn's time, two calls per data packet).
    bool m_rtoPending{false};
    Time m_rtoDeadline; //!< the RTO fires here (the event may be earlier: it re-arms)
    uint64_t m_dataPacketsSent{0};
    uint64_t m_retransmitted{0};
    uint64_t m_timeouts{0};
    uint64_t m_nacks{0};
    TracedCallback<uint64_t, Time> m_flowAcked;
};

} // namespace ns3

#endif // DISAGGSIM_ROCE_SENDER_H
