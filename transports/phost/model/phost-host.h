/*
 * disaggsim: the pHost stack of one host: its source and destination halves on the port.
 */
#ifndef DISAGGSIM_PHOST_HOST_H
#define DISAGGSIM_PHOST_HOST_H

#include "phost-destination.h"
#include "phost-header.h"
#include "phost-params.h"
#include "phost-source.h"
#include "topologies/model/fabric-host.h"

#include "ns3/callback.h"
#include "ns3/traced-callback.h"

namespace ns3
{

/**
 * \brief One host's pHost: a PhostSource (flows it sends) and a PhostDestination (flows it
 * receives) on its raw fabric port (FabricHost: no IP stack).  Arriving tokens and ACKs go
 * to the source, RTS and data to the destination, by flow id.
 *
 * Trace sources: TokenSent (flow id, packet granted), DataSent (flow id, packet),
 * Downgraded (flow id).
 */
class PhostHost : public FabricHost
{
  public:
    static TypeId GetTypeId ();
    PhostHost ();
    ~PhostHost () override;

    /// Attach to \p device (host \p hostIndex) with the run's \p params; \p finished is
    /// called when a flow destined to this host has every packet.
    void Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex, const PhostParams& params,
                Callback<void, uint64_t> finished);

    PhostSource& GetSource ()
    {
        return *m_source;
    }

    PhostDestination& GetDestination ()
    {
        return *m_destination;
    }

    const PhostParams& GetParams () const
    {
        return m_params;
    }

    /// Send a 40 B control packet (RTS, token, ACK) to host \p peer at the control level.
    void SendControl (uint8_t type, uint64_t flowId, uint32_t packet, uint64_t sizeBytes,
                      uint16_t peer);
    /// Send data packet \p packet of a flow of \p sizeBytes to \p peer at rank \p level.
    /// \returns its wire bytes.
    uint32_t SendData (uint64_t flowId, uint32_t packet, uint64_t sizeBytes, uint16_t peer,
                       uint32_t level, bool carriesRts);

    /// For the source and destination halves: fire the trace sources, report a finish.
    void NotifyTokenSent (uint64_t flowId, uint32_t packet)
    {
        m_tokenSentTrace (flowId, packet);
    }

    void NotifyDowngraded (uint64_t flowId)
    {
        m_downgradedTrace (flowId);
    }

    void NotifyFinished (uint64_t flowId)
    {
        m_finished (flowId);
    }

    /// Signature of TokenSent and DataSent: flow id, packet number.
    typedef void (*PacketTracedCallback) (uint64_t flowId, uint32_t packet);
    /// Signature of Downgraded: flow id.
    typedef void (*FlowTracedCallback) (uint64_t flowId);

  protected:
    void DoDispose () override;
    void DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now) override;

  private:
    PhostParams m_params;
    std::unique_ptr<PhostSource> m_source;
    std::unique_ptr<PhostDestination> m_destination;
    Callback<void, uint64_t> m_finished;
    TracedCallback<uint64_t, uint32_t> m_tokenSentTrace;
    TracedCallback<uint64_t, uint32_t> m_dataSentTrace;
    TracedCallback<uint64_t> m_downgradedTrace;
};

} // namespace ns3

#endif // DISAGGSIM_PHOST_HOST_H
