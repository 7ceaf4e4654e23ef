/*
 * disaggsim: TCP NewReno / DCTCP flows over the Clos fabric.
 */
#ifndef DISAGGSIM_TCP_FLOW_TRANSPORT_H
#define DISAGGSIM_TCP_FLOW_TRANSPORT_H

#include "topologies/model/flow-start-scheduler.h"
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
 * connection, established at least OpenHorizon before the flow starts, so that no handshake
 * is part of an FCT (DDC blades keep connections open), and closed (both ends) once the flow
 * has finished, so that a host only holds the connections of its flows that start within
 * about OpenHorizon or are still running (ns-3's endpoint lookup is linear in them).
 *
 * Handshakes go in HandshakeSlot-long rounds, numbered from trace time 0 (round r's SYNs leave
 * at trace time r x HandshakeSlot; r < 0 is the warm-up before trace time 0).  Every host takes
 * part (as client or server) in at most HandshakesPerSlot handshakes per round.  The schedule
 * is as late as possible: in decreasing start order, each flow takes the latest round not
 * after floor((start_ns - OpenHorizon) / HandshakeSlot) in which neither host is full.  Trace
 * time 0 (GetTraceOrigin()) is max(WarmupTime, -(first round) x HandshakeSlot, one slot), so
 * the first round is at simulation time 0 or later; flow i's bytes are handed to its idle,
 * established socket at GetTraceOrigin() + start_ns(i).  A connection still not established
 * at its flow's start (a handshake packet lost twice within OpenHorizon, or OpenHorizon below
 * a handshake) is counted in GetLateConnections() (and its data waits).
 *
 * GetTraceOrigin() is sized from the flows added so far and then fixed: call it after the
 * last AddFlow().  If it is called before any flow is added, the origin is fixed at
 * WarmupTime (or kUnsizedWarmup if WarmupTime is 0) and the run aborts at its start if the
 * handshake schedule needs longer.
 *
 * Protocol names (FlowTransportRegistry): "tcp-ns3" = TcpNewReno over DropTail ports; "dctcp-ns3" =
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

    /// Config::SetDefault for the datacenter TCP defaults shared by "tcp-ns3" and "dctcp-ns3".
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

    /**
     * Give \p topology the TCP ports (before Build): DropTailEcnQueue switch ports CE-marking
     * above \p markThresholdBytes (0 = never); host NICs of \p hostBufferBytes (0 =
     * unlimited, then never marking), the transport's attribute \p hostBufferAttribute
     * (FlowTransport::ApplyHostBufferBytes).  Shared with transports/tcp-lean.
     */
    static void SetTcpPorts (Ptr<ClosTopology> topology, uint32_t markThresholdBytes,
                             uint32_t hostBufferBytes, const std::string& hostBufferAttribute);

    void ConfigureFabric (Ptr<ClosTopology> topology) override;
    void Install (Ptr<ClosTopology> topology) override;
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

    /// \returns the connections opened before trace time 0 (in the warm-up).
    uint64_t GetWarmupConnections () const
    {
        return m_warmupConnections;
    }

    /// \returns the most connections one host took part in (as client or server) at once,
    /// counted from the SYN to the flow's last byte (TIME_WAIT not included).
    uint32_t GetPeakHostConnections () const
    {
        return m_peakHostConnections;
    }

    /// \returns the switch-port marking threshold in use (0 = no marking).
    uint32_t GetMarkThresholdBytes () const
    {
        return m_markThresholdBytes;
    }

  protected:
    void DoDispose () override;
    void DoAddFlow (const FlowSpec& flow) override;

  private:
    /// Fill m_flowRound, m_firstRound (as late as possible, see the class doc).  A cache of
    /// the flows added so far, so const: GetTraceOrigin() sizes the warm-up from it.
    void ScheduleHandshakes () const;
    /// Warm-up the schedule needs: max(WarmupTime, -(first round) x HandshakeSlot, one slot).
    Time NeededWarmup () const;
    void Begin ();
    void OpenRound ();
    void StartFlow (uint64_t flowIndex);
    void SenderBound (uint64_t flowIndex, uint16_t port);
    void FlowFinished (uint64_t flowIndex);

    // Attributes
    TypeId m_congestionControl;
    bool m_ecnMarking{false};
    uint32_t m_markThresholdAttr{0};
    uint32_t m_hostBufferBytes{0}; //!< HostBufferBytes attribute (host NIC queue, wire bytes)
    Time m_warmup;
    Time m_horizon;
    Time m_slot;
    uint32_t m_handshakesPerSlot{4};
    uint16_t m_port{5000};

    uint32_t m_mssBytes{1460};
    uint32_t m_markThresholdBytes{0};
    Ptr<ClosTopology> m_topology;
    std::vector<Ptr<TcpFlowReceiver>> m_receivers; // per host
    std::vector<FlowSpec> m_flows;
    // Handshake schedule of the flows added so far: round of each flow, the first round.
    mutable bool m_scheduled{false};
    mutable std::vector<int64_t> m_flowRound;
    mutable int64_t m_firstRound{0};
    mutable bool m_originFixed{false};
    mutable Time m_origin;
    std::vector<uint64_t> m_openOrder; // flow indices by round
    std::size_t m_nextOpen{0};
    FlowStartScheduler m_starts;               // flow indices by start time
    std::vector<Ptr<TcpFlowSender>> m_senders; // per flow, while active
    std::vector<uint32_t> m_hostConnections;   // per host: opened, flow not finished
    bool m_begun{false};
    uint64_t m_lateConnections{0};
    uint64_t m_warmupConnections{0};
    uint32_t m_peakHostConnections{0};
};

} // namespace ns3

#endif // DISAGGSIM_TCP_FLOW_TRANSPORT_H
