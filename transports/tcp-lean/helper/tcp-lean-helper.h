/*
 * disaggsim: lean TCP / DCTCP as a FlowTransport (protocol names "tcp", "dctcp"; formerly "tcp-lean", "dctcp-lean").
 */
#ifndef DISAGGSIM_TCP_LEAN_HELPER_H
#define DISAGGSIM_TCP_LEAN_HELPER_H

#include "topologies/model/flow-start-scheduler.h"
#include "topologies/model/flow-transport.h"
#include "transports/tcp-lean/model/tcp-lean-host.h"

#include <unordered_map>
#include <vector>

namespace ns3
{

/**
 * \brief Installs the lean TCP on a ClosTopology and runs SIM_FLOWS flows over it
 * (transports/tcp-lean/doc/tcp-lean.md).
 *
 * - ConfigureFabric: switch ports are DropTailEcnQueues (the `tcp-ns3` transport's ports),
 *   CE-marking above K for DCTCP (MarkThresholdBytes; 0 = TcpFlowTransport::
 *   DctcpMarkThresholdBytes, K > C × RTT / 7); host NICs are unlimited by default
 *   (HostBufferBytes, as `tcp-ns3`).
 * - Install: a TcpLeanHost on every host's port (no IPv4 stack).
 * - AddFlow: the flow's sender and receiver are created at its start time (trace time =
 *   simulation time: the connection is taken as open, doc §1) and released once its last
 *   byte is acknowledged.  Each flow's frames take the ECMP path of the 5-tuple ns-3's TCP
 *   would give it (doc §1).
 * - FlowFinished fires when the receiver has every byte in order.
 */
class TcpLeanFlowTransport : public FlowTransport
{
  public:
    static TypeId GetTypeId ();
    TcpLeanFlowTransport ();
    ~TcpLeanFlowTransport () override;

    /// Config::SetDefault for "tcp-lean" (NewReno) and "dctcp-lean" (DCTCP).
    static void SetTcpDefaults ();
    static void SetDctcpDefaults ();

    void ConfigureFabric (Ptr<ClosTopology> topology) override;
    void Install (Ptr<ClosTopology> topology) override;
    uint32_t GetPerPacketHeaderBytes () const override;
    uint32_t GetMssBytes () const override;
    std::vector<TypeId> GetConfigTypeIds () const override;
    std::vector<std::pair<std::string, std::string>> GetDerivedConfig () const override;
    /// tcp.timeouts, tcp.fast_retransmits, tcp.ecn_cuts, tcp.data_packets_sent (summed over
    /// all senders), tcp.host_nic_drops, tcp.flows_unacked.
    std::vector<std::pair<std::string, std::string>> GetStatistics () const override;

    /// \returns the switch-port marking threshold in use (0 = no marking).
    uint32_t GetMarkThresholdBytes () const
    {
        return m_markThresholdBytes;
    }

    /// \returns the sender of an active flow (nullptr once released), for tests.
    Ptr<TcpLeanSender> GetSender (uint64_t flowId) const;

    /// \returns the TcpLeanHost of host \p host (after Install).
    Ptr<TcpLeanHost> GetHostStack (uint32_t host) const
    {
        return m_hosts.at (host);
    }

  protected:
    void DoDispose () override;
    void DoAddFlow (const FlowSpec& flow) override;

  private:
    struct Flow
    {
        FlowSpec spec;
        uint16_t srcPort;
    };

    struct Active
    {
        Ptr<TcpLeanSender> sender;
        uint32_t srcHost;
        uint32_t dstHost;
    };

    void StartFlow (const Flow& flow);
    void OnAcked (uint64_t flowId, Time acked);
    void Release (uint64_t flowId);
    void Count (const TcpLeanSender& sender);

    // attributes
    bool m_dctcp{false};
    uint32_t m_markThresholdAttr{0};
    uint32_t m_hostBufferBytes{0};
    bool m_ns3Ports{true};
    bool m_prr{true};
    bool m_ns3DctcpEce{true};
    bool m_ns3PipeSsthresh{true};
    bool m_ns3Disorder{true};
    uint32_t m_mssBytes{1460};
    uint32_t m_initialCwnd{10};
    uint32_t m_dupThresh{3};
    uint32_t m_delAckCount{2};
    Time m_minRto;
    Time m_initialRto;
    Time m_clockGranularity;
    Time m_delAckTimeout;
    double m_dctcpG{1.0 / 16};
    double m_dctcpAlphaInit{1.0};
    /// Resolved from the attributes in ConfigureFabric; every sender and receiver reads them.
    TcpLeanSenderConfig m_senderConfig;
    TcpLeanReceiverConfig m_receiverConfig;

    uint32_t m_markThresholdBytes{0};
    Ptr<ClosTopology> m_topology;
    std::vector<Ptr<TcpLeanHost>> m_hosts;
    std::vector<Flow> m_flows;
    std::vector<uint32_t> m_connectionsOpened; ///< per host, as client: ns-3's port counter
    FlowStartScheduler m_starts;
    std::unordered_map<uint64_t, Active> m_active;
    uint64_t m_timeouts{0};
    uint64_t m_fastRetransmits{0};
    uint64_t m_ecnCuts{0};
    uint64_t m_dataPacketsSent{0};
};

} // namespace ns3

#endif // DISAGGSIM_TCP_LEAN_HELPER_H
