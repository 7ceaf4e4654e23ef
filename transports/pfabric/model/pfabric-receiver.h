/*
 * disaggsim: pFabric end-host receiver: one cumulative ACK per data packet.
 */
#ifndef DISAGGSIM_PFABRIC_RECEIVER_H
#define DISAGGSIM_PFABRIC_RECEIVER_H

#include "pfabric-packet-bits.h"

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

namespace ns3
{

class PfabricHost;

/**
 * \brief The receiving side of one pFabric flow (doc/pfabric.md §3).
 *
 * Every data packet (and every probe) is answered at once by a 40 B ACK of priority 0 (YAPS
 * coresim/packet.cpp: ACKs carry pf_priority 0) that carries the cumulative ACK (the next
 * byte expected) and the offset of the packet it answers, from which the sender keeps its
 * SACK scoreboard (YAPS Flow::receive_data_pkt sends the cumulative ACK and the list of
 * packets held above it).  Duplicates are counted, not delivered twice.  When every byte has
 * arrived the FlowReceived trace fires: that time is the flow's finish_ns
 * (disaggsim.schemas.FCT_RECORDS).
 */
class PfabricReceiver : public Object
{
  public:
    static TypeId GetTypeId ();
    PfabricReceiver ();
    /// A new receiver with \p prototype's FlowReceived sinks and no flow (see
    /// PfabricSender's copy constructor: PfabricFlowTransport copies one per flow).
    PfabricReceiver (const PfabricReceiver& prototype);
    PfabricReceiver& operator= (const PfabricReceiver&) = delete;
    ~PfabricReceiver () override;

    /// Set the flow up: \p srcHost is the sender's host index.
    void Setup (Ptr<PfabricHost> host, uint64_t flowId, uint16_t srcHost, uint64_t sizeBytes,
                uint32_t mssBytes);

    /// A data packet (payload at byte \p seq, \p payloadBytes long) or a probe arrived;
    /// \p flowHash is its frame's flowHash, reused by the ACK; \p now = Simulator::Now ().
    void ReceiveData (uint32_t seq, uint32_t payloadBytes, bool probe, uint32_t flowHash, Time now);

    bool IsComplete () const
    {
        return m_complete;
    }

    uint64_t GetDuplicates () const
    {
        return m_duplicates;
    }

    /// Signature of FlowReceived: flow id and the time its last byte arrived.
    typedef void (*FlowReceivedCallback) (uint64_t flowId, Time received);

  protected:
    void DoDispose () override;

  private:
    void SendAck (uint32_t sackSeq, bool probe, uint32_t flowHash, Time now);

    Ptr<PfabricHost> m_host;
    uint64_t m_flowId{0};
    uint16_t m_srcHost{0};
    uint64_t m_sizeBytes{0};
    uint32_t m_mssBytes{1460};
    uint32_t m_nPackets{0};
    PfabricPacketBits m_received;
    uint32_t m_cumPacket{0};
    uint64_t m_receivedBytes{0};
    uint64_t m_duplicates{0};
    bool m_complete{false};
    TracedCallback<uint64_t, Time> m_flowReceived;
};

} // namespace ns3

#endif // DISAGGSIM_PFABRIC_RECEIVER_H
