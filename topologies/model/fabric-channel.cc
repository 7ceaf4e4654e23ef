/*
 * disaggsim: point-to-point cable between two fabric ports.
 */
#include "fabric-channel.h"

#include "fabric-net-device.h"
#include "pooled-event.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FabricChannel");

namespace
{

/// A frame's arrival at the far port: FabricNetDevice::Receive (packet, header, txTime, at,
/// wireBytes), as MakeEvent would bind it, from the event pool.  Holds the frame's packet
/// reference, taken from the sender (TakePtr), and hands it on: a switch moves it into its
/// egress queue, so that a frame's Packet is not loaded on the way through the fabric.
class FrameArrivalEvent final : public PooledEventImpl<FrameArrivalEvent>
{
  public:
    FrameArrivalEvent (FabricNetDevice* port, Ptr<Packet>& packet, const FabricHeader& header,
                       Time txTime, Time at, uint32_t wireBytes)
          : m_port (port)
          , m_packet (TakePtr (packet))
          , m_header (header)
          , m_txTime (txTime)
          , m_at (at)
          , m_wireBytes (wireBytes)
    {
    }

  private:
    void Notify () override
    {
        m_port->Receive (m_packet, m_header, m_txTime, m_at, m_wireBytes);
    }

    FabricNetDevice* m_port;
    Ptr<Packet> m_packet;
    FabricHeader m_header;
    Time m_txTime;
    Time m_at; ///< the event's own time: Simulator::Now () when it runs
    uint32_t m_wireBytes;
};

/// A PFC frame's arrival at the far port: FabricNetDevice::ReceivePfc (classEnable, quanta,
/// at), from the event pool (no Packet: the frame travels as its fields).
class PfcArrivalEvent final : public PooledEventImpl<PfcArrivalEvent>
{
  public:
    PfcArrivalEvent (FabricNetDevice* port, uint8_t classEnable, uint16_t quanta, Time at)
          : m_port (port)
          , m_at (at)
          , m_quanta (quanta)
          , m_classEnable (classEnable)
    {
    }

  private:
    void Notify () override
    {
        m_port->ReceivePfc (m_classEnable, m_quanta, m_at);
    }

    FabricNetDevice* m_port;
    Time m_at; ///< the event's own time: Simulator::Now () when it runs
    uint16_t m_quanta;
    uint8_t m_classEnable;
};

} // namespace
NS_OBJECT_ENSURE_REGISTERED (FabricChannel);

TypeId
FabricChannel::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::FabricChannel")
            .SetParent<Channel> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<FabricChannel> ()
            .AddAttribute ("Delay", "Propagation delay of the cable", TimeValue (Seconds (0)),
                           MakeTimeAccessor (&FabricChannel::m_delay), MakeTimeChecker ());
    return tid;
}

FabricChannel::FabricChannel () = default;

FabricChannel::~FabricChannel () = default;

void
FabricChannel::Attach (Ptr<FabricNetDevice> device)
{
    NS_ABORT_MSG_IF (m_nDevices >= 2, "FabricChannel: a cable has exactly two ends");
    m_devices[m_nDevices++] = device;
}

void
FabricChannel::Transmit (const FabricNetDevice* sender, Ptr<Packet>& packet,
                         const FabricHeader& header, Time startDelay, Time txTime, Time now,
                         uint32_t wireBytes)
{
    FabricNetDevice* peer = PeekPointer (m_devices[sender == PeekPointer (m_devices[0]) ? 1 : 0]);
    // Relative to now: the arrival is startDelay + delay (+ the cut-through delay, or the
    // whole frame for a store-and-forward port) ahead.
    Time delay = peer->IsCutThrough () ? startDelay + m_delay + peer->GetCutThroughDelay ()
                                       : startDelay + txTime + m_delay;
    Simulator::ScheduleWithContext (
        peer->GetNodeId (), delay,
        new FrameArrivalEvent (peer, packet, header, txTime, now + delay, wireBytes));
}

void
FabricChannel::TransmitPfc (const FabricNetDevice* sender, uint8_t classEnable, uint16_t quanta,
                            Time txTime)
{
    FabricNetDevice* peer = PeekPointer (m_devices[sender == PeekPointer (m_devices[0]) ? 1 : 0]);
    const Time delay = peer->IsCutThrough () ? m_delay + peer->GetCutThroughDelay ()
                                             : txTime + m_delay;
    Simulator::ScheduleWithContext (
        peer->GetNodeId (), delay,
        new PfcArrivalEvent (peer, classEnable, quanta, Simulator::Now () + delay));
}

std::size_t
FabricChannel::GetNDevices () const
{
    return m_nDevices;
}

Ptr<NetDevice>
FabricChannel::GetDevice (std::size_t i) const
{
    return m_devices[i];
}

} // namespace ns3
