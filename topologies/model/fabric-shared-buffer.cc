/*
 * disaggsim: a switch's buffer shared by all its ports.
 */
#include "fabric-shared-buffer.h"

#include "ns3/assert.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (FabricSharedBuffer);

TypeId
FabricSharedBuffer::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::FabricSharedBuffer")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<FabricSharedBuffer> ()
            .AddAttribute ("SizeBytes",
                           "Packet memory of the switch in wire bytes, shared by all its ports "
                           "(FabricSwitch::SharedBufferBytes sets it)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&FabricSharedBuffer::m_sizeBytes),
                           MakeUintegerChecker<uint64_t> ())
            .AddTraceSource ("UsedBytes", "Wire bytes buffered in the switch",
                             MakeTraceSourceAccessor (&FabricSharedBuffer::m_usedTrace),
                             "ns3::TracedValueCallback::Uint64");
    return tid;
}

FabricSharedBuffer::FabricSharedBuffer () = default;

FabricSharedBuffer::~FabricSharedBuffer () = default;

bool
FabricSharedBuffer::Admit (FabricQueueItem& item, const FabricQueue& /* egress */)
{
    const uint32_t wireBytes = item.GetWireBytes ();
    if (m_usedBytes + wireBytes > m_sizeBytes)
    {
        return false;
    }
    Charge (wireBytes);
    return true;
}

void
FabricSharedBuffer::Release (uint32_t /* ingressPort */, uint8_t /* trafficClass */,
                             uint32_t wireBytes)
{
    Uncharge (wireBytes);
}

void
FabricSharedBuffer::OnDequeue (FabricQueueItem& /* item */, const FabricQueue& /* egress */)
{
}

void
FabricSharedBuffer::AddPort (FabricNetDevice* /* port */, uint32_t /* index */)
{
}

void
FabricSharedBuffer::Uncharge (uint32_t wireBytes)
{
    NS_ASSERT_MSG (m_usedBytes >= wireBytes, "FabricSharedBuffer: releasing "
                                                 << wireBytes << " B of " << m_usedBytes);
    m_usedBytes -= wireBytes;
    m_usedTrace = m_usedBytes;
}

} // namespace ns3
