/*
 * disaggsim: pFabric as a FlowTransport over the Clos fabric (protocol name "pfabric").
 */
#ifndef DISAGGSIM_PFABRIC_HELPER_H
#define DISAGGSIM_PFABRIC_HELPER_H

#include "topologies/model/flow-start-scheduler.h"
#include "topologies/model/flow-transport.h"
#include "transports/pfabric/model/pfabric-host.h"
#include "transports/pfabric/model/pfabric-receiver.h"
#include "transports/pfabric/model/pfabric-sender.h"

#include <unordered_map>
#include <vector>

namespace ns3
{

/**
 * \brief Installs pFabric on a ClosTopology and runs SIM_FLOWS flows over it
 * (transports/pfabric/doc/pfabric.md).
 *
 * - ConfigureFabric: every switch port and host NIC gets a PfabricQueue; switch ports take
 *   the topology's BufferBytes (36 KB), host NICs HostBufferBytes of this transport (default 0
 *   = unlimited: back-pressure, the host never drops its own packets; 36 KB = YAPS, whose
 *   host queues are dropping pFabric queues of queue_size).  The
 *   window and timeout are resolved here: a PfabricSender attribute left at 0 is derived
 *   from the topology's BDP (doc §6): rtt = ClosTopology::BaseRtt (ideal one-way time of a
 *   full inter-rack data packet + that of an ACK); InitialCwnd = max(2, ceil(rate x rtt / 8 / 1500
 * B)); MaxCwnd = InitialCwnd + 3; Rto = max(3 x rtt, PfabricSender::MinRto = 45 us).
 * - Install: a PfabricHost on every host's port (no IPv4 stack).
 * - AddFlow: the flow's sender and receiver are created at its start time (trace time =
 *   simulation time, no warm-up) and released once its last byte is acknowledged.
 * - FlowFinished fires when the receiver has every byte (FCT_RECORDS finish_ns).
 */
class PfabricFlowTransport : public FlowTransport
{
  public:
    static TypeId GetTypeId ();
    PfabricFlowTransport ();
    ~PfabricFlowTransport () override;

    void ConfigureFabric (Ptr<ClosTopology> topology) override;
    void Install (Ptr<ClosTopology> topology) override;
    uint32_t GetPerPacketHeaderBytes () const override;
    uint32_t GetMssBytes () const override;
    std::vector<TypeId> GetConfigTypeIds () const override;
    std::vector<std::pair<std::string, std::string>> GetDerivedConfig () const override;
    /// priority_drops_switch, priority_drops_host (every pFabric drop), host_nic_drops (arriving
    /// frames refused by the sender's NIC), timeouts, deferred_timeouts, data_packets_sent (all
    /// senders), flows_unacked: senders still waiting for their last ACK when the run stopped
    /// (the driver stops when the last flow's last byte is received, so usually 1; the FCT is
    /// the receiver's, OSDI'16 §4.3).
    std::vector<std::pair<std::string, std::string>> GetStatistics () const override;

    /// Resolved window and timeout (valid after ConfigureFabric).
    uint32_t GetInitialCwnd () const
    {
        return m_initialCwnd;
    }

    uint32_t GetMaxCwnd () const
    {
        return m_maxCwnd;
    }

    Time GetRto () const
    {
        return m_rto;
    }

    /// \returns the base round trip used for the derived values.
    Time GetBaseRtt () const
    {
        return m_baseRtt;
    }

    /// \returns retransmission timeouts summed over finished flows.
    uint64_t GetTimeouts () const
    {
        return m_timeouts;
    }

    /// \returns data packets sent (first transmissions and retransmissions) by finished flows.
    uint64_t GetDataPacketsSent () const
    {
        return m_dataPacketsSent;
    }

    /// \returns frames dropped by the pFabric rules at every port (switches and hosts): the
    /// ports' FabricQueue::GetDroppedPackets, arriving frames and evicted frames.
    uint64_t GetPriorityDrops () const;
    /// \returns GetPriorityDrops at switch ports only.
    uint64_t GetSwitchPriorityDrops () const;
    /// \returns GetPriorityDrops at host NICs only.
    uint64_t GetHostPriorityDrops () const;

    /// \returns the PfabricHost of host \p host (after Install).
    Ptr<PfabricHost> GetHostStack (uint32_t host) const
    {
        return m_hosts.at (host);
    }

    /// Signature of FlowAcked: flow id and the time the sender got the last ACK.
    typedef void (*FlowAckedCallback) (uint64_t flowId, Time acked);

  protected:
    void DoDispose () override;
    void DoAddFlow (const FlowSpec& flow) override;

  private:
    void StartFlow (const FlowSpec& flow);
    void OnFlowReceived (uint64_t flowId, Time received);
    void OnFlowAcked (uint64_t flowId, Time start, Time acked);
    void Release (uint64_t flowId);

    uint32_t m_hostBufferBytes{0};

    Ptr<ClosTopology> m_topology;
    std::vector<Ptr<PfabricHost>> m_hosts;
    std::vector<FlowSpec> m_flows; // in the order added
    FlowStartScheduler m_starts;
    struct Active
    {
        Ptr<PfabricSender> sender;
        uint32_t srcHost;
        uint32_t dstHost;
    };
    std::unordered_map<uint64_t, Active> m_active; // by flow id, until acknowledged
    /// Each flow's sender and receiver are copies of these (CopyObject): the attributes,
    /// the resolved window and timeout, and the trace sinks are set up once.
    Ptr<PfabricSender> m_senderPrototype;
    Ptr<PfabricReceiver> m_receiverPrototype;

    uint32_t m_mssBytes{1460};
    uint32_t m_initialCwnd{0};
    uint32_t m_maxCwnd{0};
    Time m_rto;
    Time m_baseRtt;
    uint64_t m_timeouts{0};
    uint64_t m_deferredTimeouts{0};
    uint64_t m_dataPacketsSent{0};
    TracedCallback<uint64_t, Time> m_flowAckedTrace;
};

} // namespace ns3

#endif // DISAGGSIM_PFABRIC_HELPER_H
