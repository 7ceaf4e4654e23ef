/*
 * disaggsim: TCP NewReno / DCTCP flows over the Clos fabric.
 */
#ifndef DISAGGSIM_TCP_FLOW_TRANSPORT_H
#define DISAGGSIM_TCP_FLOW_TRANSPORT_H

#include "topologies/model/flow-transport.h"
#include "transports/tcp/model/tcp-flow-receiver.h"
#include "transports/tcp/model/tcp-flow-sender.h"

#include "ns3/type-id.h"

#include <vector>

namespace ns3
{

/**
 * \brief ns-3's TCP (TcpSocketBase with TcpNewReno or TcpDctcp) as a FlowTransport.
 *
 * Hosts get an IPv4 stack (InternetStackHelper, IPv4 only, static routing, one /8 interface
 * on the FabricNetDevice, no queue disc); switches stay L2.  Every flow has its own
 * connection, and every connection is established in a warm-up phase before trace time 0, so
 * that no handshake is part of an FCT or meets data in a queue (DDC blades keep connections
 * open).  The warm-up is a sequence of HandshakeSlot-long rounds; in each round every host
 * takes part (as client or server) in at most HandshakesPerSlot handshakes.  Trace time 0
 * (GetTraceOrigin()) is the end of the last round plus one slot; flow i's bytes are handed to
 * its idle, established socket at GetTraceOrigin() + start_ns(i).  A connection still not
 * established at its flow's start is counted in GetLateConnections() (and its data waits).
 *
 * GetTraceOrigin() is sized from the flows added so far and then fixed: call it after the
 * last AddFlow().  If it is called before any flow is added, the origin is fixed at
 * WarmupTime (or kUnsizedWarmup if WarmupTime is 0) and the run aborts at its start if the
 * handshake schedule needs longer.
 *
 * Protocol names (FlowTransportRegistry): "tcp" = TcpNewReno over DropTail ports; "dctcp" =
 * TcpDctcp with UseEcn=On over ports that CE-mark above K (MarkThresholdBytes; 0 = derived
 * from the topology: K > C x RTT / 7, Alizadeh et al. SIGCOMM'10 §3.4).  Host NICs are
 * unlimited by default (HostBufferBytes = 0: no drop, no mark); with a limit (36864 = YAPS)
 * they are the switch ports' queue (DropTail, CE-marking above K for dctcp).  All socket defaults
 * and their sources: transports/tcp/doc/tcp.md.
 */
class TcpFlowTransport : public FlowTransport
{
  public:
    static TypeId GetTypeId ();
    TcpFlowTransport ();
    ~TcpFlowTransport () override;

    /// Config::SetDefault for the datacenter TCP defaults shared by "tcp" and "dctcp".
    static void SetTcpDefaults ();
    /// SetTcpDefaults plus DCTCP: TcpDctcp, UseEcn=On, ECN marking at switch ports.
    static void SetDctcpDefaults ();

    /**
     * \returns the DCTCP marking threshold K in wire bytes for \p topology:
     * ceil(C x RTT / 7 / P) packets of P = mss + 58 wire bytes, at least one, where C is the
     * access rate and RTT the base inter-rack round trip (ideal one-way time of a full data
     * packet plus that of a 58 B ACK; intra-rack if there is one rack).
     */
    static uint32_t DctcpMarkThresholdBytes (Ptr<const ClosTopology> topology, uint32_t mssBytes);

    void ConfigureFabric (Ptr<ClosTopology> topology) override;
    void Install (Ptr<ClosTopology> topology) override;
    void AddFlow (const FlowSpec& flow) override;
    uint32_t GetPerPacketHeaderBytes () const override;
    uint32_t GetMssBytes () const override;
    Time GetTraceOrigin () const override;
    std::vector<TypeId> GetConfigTypeIds () const override;
    std::vector<std::pair<std::string, std::string>> GetDerivedConfig () const override;
    std::vector<std::pair<std::string, std::string>> GetStatistics () const override;

    /// Warm-up used when GetTraceOrigin() is asked before any flow is known and WarmupTime
    /// is 0 (idle simulated time costs no events).
    static constexpr int64_t kUnsizedWarmupUs = 10000;

    /// \returns flows whose handshake had not completed at their start time.
    uint64_t GetLateConnections () const
    {
        return m_lateConnections;
    }

    /// \returns the number of handshake rounds the flows added so far need.
    uint64_t GetHandshakeRounds () const
    {
        return m_rounds;
    }

    /// \returns the switch-port marking threshold in use (0 = no marking).
    uint32_t GetMarkThresholdBytes () const
    {
        return m_markThresholdBytes;
    }

  protected:
    void DoDispose () override;

  private:
    void Begin ();
    void OpenRound ();
    void StartDue ();
    /// Warm-up the flows added so far need: (rounds + 1) x HandshakeSlot, at least WarmupTime.
    Time NeededWarmup () const;
    void SenderBound (uint64_t flowIndex, uint16_t port);
    void FlowFinished (uint64_t flowIndex);

    // Attributes
    TypeId m_congestionControl;
    bool m_ecnMarking{false};
    uint32_t m_markThresholdAttr{0};
    uint32_t m_hostBufferBytes{0}; //!< HostBufferBytes attribute (host NIC queue, wire bytes)
    Time m_warmup;
    Time m_slot;
    uint32_t m_handshakesPerSlot{4};
    uint16_t m_port{5000};

    uint32_t m_mssBytes{1460};
    uint32_t m_markThresholdBytes{0};
    Ptr<ClosTopology> m_topology;
    std::vector<Ptr<TcpFlowReceiver>> m_receivers; // per host
    std::vector<FlowSpec> m_flows;
    // Handshake schedule: round of each flow, and per host its last round and its handshakes
    // in that round.
    std::vector<uint64_t> m_flowRound;
    std::vector<uint64_t> m_hostRound;
    std::vector<uint32_t> m_hostRoundCount;
    uint64_t m_rounds{0};
    mutable bool m_originFixed{false};
    mutable Time m_origin;
    std::vector<uint64_t> m_openOrder; // flow indices by round
    std::size_t m_nextOpen{0};
    std::vector<uint64_t> m_startOrder; // flow indices by start time
    std::size_t m_nextStart{0};
    std::vector<Ptr<TcpFlowSender>> m_senders; // per flow, while active
    bool m_begun{false};
    uint64_t m_lateConnections{0};
};

} // namespace ns3

#endif // DISAGGSIM_TCP_FLOW_TRANSPORT_H
