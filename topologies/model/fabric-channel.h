/*
 * disaggsim: point-to-point cable between two fabric ports.
 */
#ifndef DISAGGSIM_FABRIC_CHANNEL_H
#define DISAGGSIM_FABRIC_CHANNEL_H

#include "fabric-header.h"

#include "ns3/channel.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"

namespace ns3
{

class FabricNetDevice;

/**
 * \brief A full-duplex cable between two FabricNetDevices with a propagation delay
 * (cable length × ns per metre; 5 ns/m, Gao et al. OSDI'16 §3.3).
 *
 * Delivery time of a frame whose transmission starts at t0 and lasts txTime:
 * - to a cut-through switch port: t0 + Delay + the switch's switching delay (the head has
 *   arrived and the forwarding decision is made; FabricSwitch then enforces the no-underrun
 *   rule on the egress);
 * - to a host port: t0 + txTime + Delay (the tail has arrived).
 * See topologies/doc/clos.md "Timing".
 */
class FabricChannel : public Channel
{
  public:
    static TypeId GetTypeId ();
    FabricChannel ();
    ~FabricChannel () override;

    /// Connect \p device to this channel (at most two devices).
    void Attach (Ptr<FabricNetDevice> device);

    /**
     * Put a frame on the wire from \p sender: schedules its reception at the peer (see class
     * doc).  The first bit leaves \p startDelay (>= 0) from \p now (= Simulator::Now ());
     * \p txTime is its serialization time and \p wireBytes its wire bytes (carried to the
     * peer).  Takes \p packet's reference (TakePtr: \p packet is left null).
     */
    void Transmit (const FabricNetDevice* sender, Ptr<Packet>& packet, const FabricHeader& header,
                   Time startDelay, Time txTime, Time now, uint32_t wireBytes);

    /**
     * Put a MAC control frame (a PFC frame saying pause time \p quanta for the classes of
     * \p classEnable, \p txTime on the wire) on the wire from \p sender now: the peer port
     * consumes it (FabricNetDevice::ReceivePfc) at the time a data frame would be delivered,
     * and it never reaches the peer's switch or host.
     */
    void TransmitPfc (const FabricNetDevice* sender, uint8_t classEnable, uint16_t quanta,
                      Time txTime);

    Time GetDelay () const
    {
        return m_delay;
    }

    std::size_t GetNDevices () const override;
    Ptr<NetDevice> GetDevice (std::size_t i) const override;

  private:
    Time m_delay;
    Ptr<FabricNetDevice> m_devices[2];
    std::size_t m_nDevices{0};
};

} // namespace ns3

#endif // DISAGGSIM_FABRIC_CHANNEL_H
