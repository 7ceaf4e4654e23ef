/*
 * disaggsim: a switch memory-management unit for a lossless fabric (PFC, RED-ECN).
 */
#include "switch-mmu.h"

#include "fabric-channel.h"
#include "fabric-net-device.h"
#include "pfc-header.h"

#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("SwitchMmu");
NS_OBJECT_ENSURE_REGISTERED (SwitchMmu);

TypeId
SwitchMmu::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::SwitchMmu")
            .SetParent<FabricSharedBuffer> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<SwitchMmu> ()
            .AddAttribute ("XoffBytes",
                           "Static XOFF threshold: shared use of one (ingress port, class) "
                           "above which PFC pauses it; 0 (default) = dynamic, Alpha x free "
                           "shared buffer (HPCC's simulator, mix/config.txt "
                           "USE_DYNAMIC_PFC_THRESHOLD 1)",
                           UintegerValue (0), MakeUintegerAccessor (&SwitchMmu::m_xoffBytes),
                           MakeUintegerChecker<uint64_t> ())
            .AddAttribute ("Alpha",
                           "Dynamic threshold factor: XOFF = Alpha x free shared buffer "
                           "(Choudhury & Hahne 1998; 1/8 in HPCC's simulator, "
                           "scratch/third.cc pfc_a_shift = 3)",
                           DoubleValue (0.125), MakeDoubleAccessor (&SwitchMmu::m_alpha),
                           MakeDoubleChecker<double> (0))
            .AddAttribute ("XonOffsetBytes",
                           "XON when the shared use is this far below XOFF and the headroom "
                           "is empty (3 KB, HPCC's simulator SwitchMmu resume_offset)",
                           UintegerValue (3072),
                           MakeUintegerAccessor (&SwitchMmu::m_xonOffsetBytes),
                           MakeUintegerChecker<uint64_t> ())
            .AddAttribute ("ReserveBytes",
                           "Guaranteed bytes of each (ingress port, class), not shared (4 KB, "
                           "HPCC's simulator SwitchMmu reserve)",
                           UintegerValue (4096), MakeUintegerAccessor (&SwitchMmu::m_reserveBytes),
                           MakeUintegerChecker<uint64_t> ())
            .AddAttribute ("HeadroomBytes",
                           "Headroom of every ingress port; 0 (default) = derived per port "
                           "from its rate, cable delay, the switching delay and the rate of "
                           "the switch's slowest port "
                           "(DerivedHeadroomBytes; IEEE 802.1Qbb Annex N)",
                           UintegerValue (0), MakeUintegerAccessor (&SwitchMmu::m_headroomBytes),
                           MakeUintegerChecker<uint64_t> ())
            .AddAttribute ("PauseQuanta",
                           "Pause time of an XOFF frame in quanta of 512 bit times; repeated "
                           "every half pause while the pause lasts, ended by XON (0xFFFF, the "
                           "largest, IEEE 802.1Qbb §36.1.3.2)",
                           UintegerValue (0xFFFF), MakeUintegerAccessor (&SwitchMmu::m_pauseQuanta),
                           MakeUintegerChecker<uint16_t> (1))
            .AddAttribute ("EcnEnabled", "CE-mark ECN-capable frames with RED at the egress",
                           BooleanValue (true), MakeBooleanAccessor (&SwitchMmu::m_ecn),
                           MakeBooleanChecker ())
            .AddAttribute ("EcnKminBytes",
                           "RED Kmin: no mark at or below (5 KB, DCQCN Zhu et al. SIGCOMM'15 §5)",
                           UintegerValue (5000), MakeUintegerAccessor (&SwitchMmu::m_kminBytes),
                           MakeUintegerChecker<uint64_t> ())
            .AddAttribute ("EcnKmaxBytes",
                           "RED Kmax: every ECT frame marked above (200 KB, DCQCN §5)",
                           UintegerValue (200000), MakeUintegerAccessor (&SwitchMmu::m_kmaxBytes),
                           MakeUintegerChecker<uint64_t> ())
            .AddAttribute ("EcnPmax", "RED marking probability at Kmax (1 %, DCQCN §5)",
                           DoubleValue (0.01), MakeDoubleAccessor (&SwitchMmu::m_pmax),
                           MakeDoubleChecker<double> (0, 1))
            .AddAttribute ("EcnReferenceRate",
                           "Link rate at which EcnKminBytes and EcnKmaxBytes hold: a port of "
                           "rate R marks at Kmin R / this and Kmax R / this, read when the "
                           "port is added (HPCC's simulator: KMIN_MAP / KMAX_MAP per link "
                           "rate, linear in the rate in every map it ships: mix/config.txt "
                           "25/50/100 Gb/s -> Kmin 100/200/400 KB, run.py bw and 4 bw); 0 "
                           "(default): every port at EcnKminBytes / EcnKmaxBytes",
                           DataRateValue (DataRate (0)),
                           MakeDataRateAccessor (&SwitchMmu::m_ecnReferenceRate),
                           MakeDataRateChecker ())
            .AddAttribute ("EcnAtDequeue",
                           "false: RED reads the egress queue a frame joins, at its arrival "
                           "(the bytes ahead of it); true: at its departure, the bytes left "
                           "behind it (HPCC's simulator, switch-node.cc SwitchNotifyDequeue "
                           "-> switch-mmu.cc ShouldSendCN), a congestion signal one queueing "
                           "delay earlier",
                           BooleanValue (false),
                           MakeBooleanAccessor (&SwitchMmu::m_marksOnDequeue),
                           MakeBooleanChecker ())
            .AddTraceSource ("IngressBytes",
                             "Bytes buffered for an (ingress port, class) changed",
                             MakeTraceSourceAccessor (&SwitchMmu::m_ingressTrace),
                             "ns3::SwitchMmu::IngressTracedCallback");
    return tid;
}

SwitchMmu::SwitchMmu () = default;

SwitchMmu::~SwitchMmu () = default;

uint64_t
SwitchMmu::DerivedHeadroomBytes (uint64_t bitRate, Time cableDelay, Time switchingDelay,
                                 uint32_t maxFrameBytes, uint64_t slowestBitRate)
{
    const Time pauseFrame = FabricNetDevice::TxTimeFor (kPfcFrameBytes, bitRate);
    const Time response = std::max (switchingDelay, pauseFrame);
    const int64_t ps = (2 * cableDelay + 2 * response).GetPicoSeconds ();
    // bytes = ceil (rate [bit/s] x ps / 8e12)
    const uint64_t bits = (bitRate / 1000 * static_cast<uint64_t> (ps) + 999999999) / 1000000000;
    // The frame the pause waits behind holds this port for up to a maximum frame's time at
    // the slowest rate feeding it (a cut-through port takes a frame from a slower ingress at
    // its head and starts it txIn - txOut later: FabricSwitch::ReceiveFrame), while data
    // keeps arriving at this port's rate: ceil (F x rate / slowest rate) bytes.
    const uint64_t slowest = slowestBitRate != 0 ? std::min (slowestBitRate, bitRate) : bitRate;
    const uint64_t waitBytes = (uint64_t (maxFrameBytes) * bitRate + slowest - 1) / slowest;
    return 2ULL * maxFrameBytes + waitBytes + (bits + 7) / 8;
}

void
SwitchMmu::AddPort (FabricNetDevice* port, uint32_t index)
{
    if (m_ports.size () <= index)
    {
        m_ports.resize (index + 1);
    }
    m_ports[index].device = port;
    if (m_headroomBytes == 0)
    {
        NS_ABORT_MSG_IF (!port->GetChannel (), "SwitchMmu: port " << index << " has no cable");
    }
    RecomputeReserved ();
    if (m_ecnReferenceRate.GetBitRate () != 0)
    {
        const uint64_t rate = port->GetDataRate ().GetBitRate ();
        const std::pair<uint64_t, uint64_t> k{ScaleToRate (m_kminBytes, rate),
                                              ScaleToRate (m_kmaxBytes, rate)};
        m_redByQueue[PeekPointer (port->GetQueue ())] = k;
        // A queue not in the map (none of this switch's ports) marks at Kmin itself.
        const uint64_t lowest = m_redByQueue.size () == 1 ? m_kminBytes : m_lowestKminBytes;
        m_lowestKminBytes = std::min (lowest, k.first);
    }
}

void
SwitchMmu::RecomputeReserved ()
{
    // Each port's derived headroom depends on the slowest port of the switch, so a new port
    // resizes them all.
    uint64_t slowest = 0;
    for (const Port& p : m_ports)
    {
        if (p.device != nullptr)
        {
            const uint64_t rate = p.device->GetDataRate ().GetBitRate ();
            slowest = slowest == 0 ? rate : std::min (slowest, rate);
        }
    }
    // As HPCC's simulator (SwitchMmu::ConfigNPort): one class's headroom and reserve per port.
    m_reservedBytes = 0;
    for (Port& p : m_ports)
    {
        if (p.device == nullptr)
        {
            continue;
        }
        if (m_headroomBytes != 0)
        {
            p.headroomBytes = m_headroomBytes;
        }
        else
        {
            const Time delay = DynamicCast<FabricChannel> (p.device->GetChannel ())->GetDelay ();
            p.headroomBytes = DerivedHeadroomBytes (
                p.device->GetDataRate ().GetBitRate (), delay, p.device->GetCutThroughDelay (),
                p.device->GetMtu () + kFabricHeaderBytes, slowest);
        }
        m_reservedBytes += p.headroomBytes + m_reserveBytes;
    }
}

void
SwitchMmu::CheckSize (const std::string& where) const
{
    NS_ABORT_MSG_IF (m_reservedBytes > GetSizeBytes (),
                     where << ": SwitchMmu::SizeBytes " << GetSizeBytes ()
                           << " B is less than its ports' headroom and reserve ("
                           << m_reservedBytes << " B)");
}

uint64_t
SwitchMmu::GetXoffThresholdBytes () const
{
    if (m_xoffBytes != 0)
    {
        return m_xoffBytes;
    }
    const uint64_t unshared = m_reservedBytes + m_sharedUsed;
    const uint64_t free = GetSizeBytes () > unshared ? GetSizeBytes () - unshared : 0;
    return static_cast<uint64_t> (m_alpha * static_cast<double> (free));
}

uint64_t
SwitchMmu::ScaleToRate (uint64_t bytes, uint64_t bitRate) const
{
    return static_cast<uint64_t> (static_cast<unsigned __int128> (bytes) * bitRate /
                                  m_ecnReferenceRate.GetBitRate ());
}

uint64_t
SwitchMmu::ScaleToPort (uint64_t bytes, uint32_t port) const
{
    if (m_ecnReferenceRate.GetBitRate () == 0 || port >= m_ports.size () ||
        m_ports[port].device == nullptr)
    {
        return bytes;
    }
    return ScaleToRate (bytes, m_ports[port].device->GetDataRate ().GetBitRate ());
}

uint64_t
SwitchMmu::GetEcnKminBytes (uint32_t port) const
{
    return ScaleToPort (m_kminBytes, port);
}

uint64_t
SwitchMmu::GetEcnKmaxBytes (uint32_t port) const
{
    return ScaleToPort (m_kmaxBytes, port);
}

bool
SwitchMmu::RedMarks (uint64_t egressBytes, const FabricQueue& egress)
{
    if (m_redByQueue.empty ())
    {
        return RedMarks (egressBytes, m_kminBytes, m_kmaxBytes);
    }
    if (egressBytes <= m_lowestKminBytes)
    {
        return false; // below every port's Kmin: no lookup
    }
    const auto it = m_redByQueue.find (&egress);
    return it == m_redByQueue.end () ? RedMarks (egressBytes, m_kminBytes, m_kmaxBytes)
                                     : RedMarks (egressBytes, it->second.first, it->second.second);
}

bool
SwitchMmu::RedMarks (uint64_t egressBytes, uint64_t kminBytes, uint64_t kmaxBytes)
{
    if (egressBytes <= kminBytes)
    {
        return false;
    }
    if (egressBytes > kmaxBytes)
    {
        return true;
    }
    if (!m_red)
    {
        m_red = CreateObject<UniformRandomVariable> ();
    }
    const double p = m_pmax * static_cast<double> (egressBytes - kminBytes) /
                     static_cast<double> (kmaxBytes - kminBytes);
    return m_red->GetValue () < p;
}

bool
SwitchMmu::Admit (FabricQueueItem& item, const FabricQueue& egress)
{
    const uint32_t port = item.ingressPort;
    if (port >= m_ports.size () || m_ports[port].device == nullptr)
    {
        return FabricSharedBuffer::Admit (item, egress); // not from a port of this switch
    }
    const uint8_t cls = item.header.trafficClass;
    const uint64_t size = item.GetWireBytes ();
    Port& p = m_ports[port];
    Ingress& in = p.ingress[cls];
    const uint64_t threshold = GetXoffThresholdBytes ();
    // HPCC's SwitchMmu::CheckIngressAdmission and UpdateIngressAdmission.
    if (in.headroom + size > p.headroomBytes && SharedUse (in) + size > threshold)
    {
        NS_LOG_LOGIC ("drop at ingress " << port << " class " << uint32_t (cls)
                                         << ": headroom full");
        ++m_dropped;
        return false;
    }
    const uint64_t after = in.bytes + size;
    if (after > m_reserveBytes && after - m_reserveBytes > threshold)
    {
        in.headroom += size;
    }
    else
    {
        if (after > m_reserveBytes)
        {
            m_sharedUsed += std::min<uint64_t> (size, after - m_reserveBytes);
        }
        in.bytes = after;
    }
    Charge (static_cast<uint32_t> (size));
    const uint64_t total = in.bytes + in.headroom;
    in.peakBytes = std::max (in.peakBytes, total);
    in.peakHeadroom = std::max (in.peakHeadroom, in.headroom);
    m_ingressTrace (port, cls, total);
    if (!in.pausing && (in.headroom > 0 || SharedUse (in) >= GetXoffThresholdBytes ()))
    {
        in.pausing = true;
        SendXoff (port, cls);
    }
    if (m_ecn && !m_marksOnDequeue && item.header.IsEct () &&
        RedMarks (egress.GetNBytes (), egress))
    {
        item.header.ecn = FabricEcn::CE;
    }
    return true;
}

void
SwitchMmu::OnDequeue (FabricQueueItem& item, const FabricQueue& egress)
{
    if (m_ecn && item.header.IsEct () && RedMarks (egress.GetNBytes (), egress))
    {
        item.header.ecn = FabricEcn::CE;
    }
}

void
SwitchMmu::Release (uint32_t ingressPort, uint8_t trafficClass, uint32_t wireBytes)
{
    if (ingressPort >= m_ports.size () || m_ports[ingressPort].device == nullptr)
    {
        FabricSharedBuffer::Release (ingressPort, trafficClass, wireBytes);
        return;
    }
    Ingress& in = m_ports[ingressPort].ingress[trafficClass];
    // HPCC's SwitchMmu::RemoveFromIngressAdmission: headroom first, then shared, then reserve.
    const uint64_t fromHeadroom = std::min<uint64_t> (in.headroom, wireBytes);
    const uint64_t rest = wireBytes - fromHeadroom;
    const uint64_t fromShared = std::min (rest, SharedUse (in));
    in.headroom -= fromHeadroom;
    in.bytes -= rest;
    m_sharedUsed -= fromShared;
    Uncharge (wireBytes);
    m_ingressTrace (ingressPort, trafficClass, in.bytes + in.headroom);
    if (in.pausing && in.headroom == 0)
    {
        const uint64_t shared = SharedUse (in);
        if (shared == 0 || shared + m_xonOffsetBytes <= GetXoffThresholdBytes ())
        {
            in.pausing = false;
            in.refresh.Cancel ();
            m_ports[ingressPort].device->SendPfc (static_cast<uint8_t> (1u << trafficClass), 0);
        }
    }
}

void
SwitchMmu::SendXoff (uint32_t port, uint8_t trafficClass)
{
    FabricNetDevice* device = m_ports[port].device;
    device->SendPfc (static_cast<uint8_t> (1u << trafficClass), m_pauseQuanta);
    // Repeat before the upstream's timer runs out (half the pause, at the link's rate).
    const uint64_t pauseBytes = uint64_t (m_pauseQuanta) * kPfcBitsPerQuantum / 8;
    const Time half =
        FabricNetDevice::TxTimeFor (pauseBytes, device->GetDataRate ().GetBitRate ()) / 2;
    m_ports[port].ingress[trafficClass].refresh =
        Simulator::Schedule (half, &SwitchMmu::RefreshXoff, this, port, trafficClass);
}

void
SwitchMmu::RefreshXoff (uint32_t port, uint8_t trafficClass)
{
    if (m_ports[port].ingress[trafficClass].pausing)
    {
        SendXoff (port, trafficClass);
    }
}

uint64_t
SwitchMmu::GetHeadroomBytes (uint32_t port) const
{
    return port < m_ports.size () ? m_ports[port].headroomBytes : 0;
}

uint64_t
SwitchMmu::GetIngressBytes (uint32_t port, uint8_t trafficClass) const
{
    if (port >= m_ports.size ())
    {
        return 0;
    }
    const Ingress& in = m_ports[port].ingress.at (trafficClass);
    return in.bytes + in.headroom;
}

uint64_t
SwitchMmu::GetPeakIngressBytes (uint32_t port, uint8_t trafficClass) const
{
    return port < m_ports.size () ? m_ports[port].ingress.at (trafficClass).peakBytes : 0;
}

uint64_t
SwitchMmu::GetPeakHeadroomBytes (uint32_t port, uint8_t trafficClass) const
{
    return port < m_ports.size () ? m_ports[port].ingress.at (trafficClass).peakHeadroom : 0;
}

bool
SwitchMmu::IsPausing (uint32_t port, uint8_t trafficClass) const
{
    return port < m_ports.size () && m_ports[port].ingress.at (trafficClass).pausing;
}

} // namespace ns3
