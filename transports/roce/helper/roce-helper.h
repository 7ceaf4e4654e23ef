/*
 * disaggsim: RoCEv2 as a FlowTransport over the Clos fabric (protocols roce-dcqcn,
 * roce-hpcc, roce-none).
 */
#ifndef DISAGGSIM_ROCE_HELPER_H
#define DISAGGSIM_ROCE_HELPER_H

#include "topologies/model/flow-start-scheduler.h"
#include "topologies/model/flow-transport.h"
#include "transports/roce/model/roce-cc.h"
#include "transports/roce/model/roce-host.h"
#include "transports/roce/model/roce-receiver.h"
#include "transports/roce/model/roce-sender.h"

#include "ns3/object-factory.h"

#include <unordered_map>
#include <vector>

namespace ns3
{

/**
 * \brief Installs RoCEv2 RC queue pairs on a ClosTopology and runs SIM_FLOWS flows over it
 * (transports/roce/doc/roce.md).
 *
 * - ConfigureFabric: DropTailEcnQueue ports (on the lossless fabric the SwitchMmu does the
 *   buffer, PFC and RED-ECN); host NICs unlimited (the QP scheduler keeps one data frame at
 *   the port).  The base RTT T (HPCC's T, DCQCN's none) is resolved here: the IdealFct of a
 *   full data packet from host 0 to the farthest host plus that of an ACK back.
 * - Install: a RoceHost on every host's port.
 * - AddFlow: at the flow's start its QP is created: WRITE (the default) sends the data at
 *   once; READ (attribute Read) first sends the request from the data's destination, and the
 *   source's QP starts when it arrives.  FlowFinished fires when the receiver has the last
 *   byte.  The QP is released when its last byte is acknowledged.
 */
class RoceFlowTransport : public FlowTransport
{
  public:
    /// Congestion control of every QP (attribute CongestionControl).
    enum CongestionControl
    {
        CC_NONE,  //!< line rate, PFC alone
        CC_DCQCN, //!< Zhu et al. SIGCOMM'15
        CC_HPCC   //!< Li et al. SIGCOMM'19
    };

    static TypeId GetTypeId ();
    RoceFlowTransport ();
    ~RoceFlowTransport () override;

    void ConfigureFabric (Ptr<ClosTopology> topology) override;
    void Install (Ptr<ClosTopology> topology) override;
    /// 44 B of RoCEv2 headers (+ 42 B of INT header with HPCC).
    uint32_t GetPerPacketHeaderBytes () const override;
    /// The payload per full data packet: MssBytes, at most the active MTU (0: that MTU).
    uint32_t GetMssBytes () const override;

    /**
     * \returns the active RoCE MTU of a port whose IP MTU is \p portMtuBytes: the largest IB
     * MTU (256, 512, 1024, 2048 or 4096 B; enum ib_mtu) not above the IP MTU less 96 B of
     * RoCE headers as Linux reserves them (include/rdma/ib_addr.h iboe_get_mtu: GRH 40,
     * UDP 8, BTH 12, XRCETH 4, AtomicETH 28, ICRC 4) and less \p intHeaderBytes (HPCC's INT
     * header); 0 if not even 256 B fit.  1500 B -> 1024 (NVIDIA's "MTU considerations for
     * RoCE based applications": 1024 for the default 1500, 4096 for 4200).
     */
    static uint32_t ActiveMtuBytes (uint32_t portMtuBytes, uint32_t intHeaderBytes);
    std::vector<TypeId> GetConfigTypeIds () const override;
    std::vector<std::pair<std::string, std::string>> GetDerivedConfig () const override;
    /// data_packets_sent, retransmitted_packets, timeouts, nacks, cnps, acks,
    /// host_nic_drops, flows_unacked.
    std::vector<std::pair<std::string, std::string>> GetStatistics () const override;
    /// READ: the request's one-way time (its IdealFct from the data's destination to its
    /// source); WRITE: 0.
    Time GetLoneFlowExtraDelay (const FlowSpec& flow) const override;

    Time GetBaseRtt () const
    {
        return m_baseRtt;
    }

    /// \returns the QP (sender) of an active flow, or nullptr.
    Ptr<RoceSender> GetSender (uint64_t flowId) const;
    /// \returns the receiver of an active flow, or nullptr.
    Ptr<RoceReceiver> GetReceiver (uint64_t flowId) const;

    /// Signature of FlowAcked: flow id and the time its sender got the last byte's ACK.
    typedef void (*FlowAckedCallback) (uint64_t flowId, Time acked);

    uint64_t GetRetransmittedPackets () const;
    uint64_t GetDataPacketsSent () const;

  protected:
    void DoDispose () override;
    void DoAddFlow (const FlowSpec& flow) override;

  private:
    void StartFlow (const FlowSpec& flow);
    void OnFlowReceived (uint64_t flowId, Time received);
    void OnFlowAcked (uint64_t flowId, Time acked);
    void Release (uint64_t flowId);
    /// Totals over released and active flows.
    struct Counters
    {
        uint64_t dataPackets{0};
        uint64_t retransmitted{0};
        uint64_t timeouts{0};
        uint64_t nacks{0};
        uint64_t cnps{0};
        uint64_t acks{0};
    };
    Counters Totals () const;

    CongestionControl m_ccKind{CC_DCQCN};
    bool m_read{false};
    uint32_t m_mssBytes{1000};
    uint32_t m_portMtuBytes{0};   //!< FabricNetDevice::Mtu at ConfigureFabric
    uint32_t m_activeMtuBytes{0}; //!< ActiveMtuBytes of it
    uint32_t m_payloadBytes{0};   //!< payload per full data packet (ConfigureFabric)

    Ptr<ClosTopology> m_topology;
    std::vector<Ptr<RoceHost>> m_hosts;
    std::vector<FlowSpec> m_flows;
    FlowStartScheduler m_starts;
    struct Active
    {
        Ptr<RoceSender> sender;
        Ptr<RoceReceiver> receiver;
        uint32_t srcHost;
        uint32_t dstHost;
    };
    std::unordered_map<uint64_t, Active> m_active;
    Ptr<RoceSender> m_senderPrototype;
    Ptr<RoceReceiver> m_receiverPrototype;
    ObjectFactory m_ccFactory; //!< the QPs' congestion control
    Time m_baseRtt;
    Counters m_released;
    TracedCallback<uint64_t, Time> m_flowAckedTrace;
};

} // namespace ns3

#endif // DISAGGSIM_ROCE_HELPER_H
