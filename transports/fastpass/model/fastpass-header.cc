/*
 * disaggsim: what a Fastpass packet carries besides the fabric frame header.
 */
#include "fastpass-header.h"

#include "ns3/abort.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (FastpassHeader);

TypeId
FastpassHeader::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::FastpassHeader")
                            .SetParent<Header> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<FastpassHeader> ();
    return tid;
}

TypeId
FastpassHeader::GetInstanceTypeId () const
{
    return GetTypeId ();
}

uint32_t
FastpassHeader::GetSerializedSize () const
{
    const uint32_t allocBytes =
        type == DST_ALLOC ? kFastpassDstAllocEntryBytes : kFastpassAllocEntryBytes;
    return kFastpassHeaderBytes + static_cast<uint32_t> (allocs.size ()) * allocBytes +
           static_cast<uint32_t> (missing.size ()) * kFastpassMissingEntryBytes +
           static_cast<uint32_t> (areqs.size ()) * kFastpassAreqEntryBytes;
}

void
FastpassHeader::Serialize (Buffer::Iterator start) const
{
    NS_ABORT_MSG_IF (slot >> 40 != 0, "FastpassHeader: timeslot " << slot << " exceeds 40 bits");
    start.WriteU8 (type);
    start.WriteHtonU64 (flowId);
    start.WriteHtonU32 (value0);
    start.WriteHtonU32 (value1);
    start.WriteU8 (static_cast<uint8_t> (slot >> 32));
    start.WriteHtonU32 (static_cast<uint32_t> (slot));
    for (const FastpassAllocEntry& entry : allocs)
    {
        if (type == DST_ALLOC)
        {
            NS_ABORT_MSG_IF (entry.spine >= 0xFF && entry.spine != 0xFFFF,
                             "FastpassHeader: spine " << entry.spine << " exceeds 254");
            start.WriteHtonU16 (static_cast<uint16_t> (entry.flowId));
            start.WriteU8 (entry.slotOffset);
            start.WriteU8 (static_cast<uint8_t> (entry.spine));
            continue;
        }
        start.WriteHtonU64 (entry.flowId);
        start.WriteU8 (entry.slotOffset);
        start.WriteHtonU16 (entry.spine);
    }
    for (const FastpassAreqEntry& entry : areqs)
    {
        start.WriteHtonU16 (entry.dst);
        start.WriteHtonU32 (entry.total);
        start.WriteHtonU32 (entry.received);
        start.WriteHtonU32 (entry.shortest);
    }
    for (uint32_t index : missing)
    {
        start.WriteHtonU32 (index);
    }
}

uint32_t
FastpassHeader::Deserialize (Buffer::Iterator start)
{
    type = start.ReadU8 ();
    flowId = start.ReadNtohU64 ();
    value0 = start.ReadNtohU32 ();
    value1 = start.ReadNtohU32 ();
    slot = static_cast<uint64_t> (start.ReadU8 ()) << 32;
    slot |= start.ReadNtohU32 ();
    allocs.clear ();
    missing.clear ();
    areqs.clear ();
    if (type == DST_ALLOC)
    {
        allocs.resize (value1);
        for (FastpassAllocEntry& entry : allocs)
        {
            entry.flowId = start.ReadNtohU16 ();
            entry.slotOffset = start.ReadU8 ();
            const uint8_t spine = start.ReadU8 ();
            entry.spine = spine == 0xFF ? 0xFFFF : spine; // 0xFF = any uplink (intra-rack)
        }
    }
    else if (type == AREQ)
    {
        areqs.resize (value1);
        for (FastpassAreqEntry& entry : areqs)
        {
            entry.dst = start.ReadNtohU16 ();
            entry.total = start.ReadNtohU32 ();
            entry.received = start.ReadNtohU32 ();
            entry.shortest = start.ReadNtohU32 ();
        }
    }
    else if (type == ALLOC)
    {
        allocs.resize (value1);
        for (FastpassAllocEntry& entry : allocs)
        {
            entry.flowId = start.ReadNtohU64 ();
            entry.slotOffset = start.ReadU8 ();
            entry.spine = start.ReadNtohU16 ();
        }
    }
    else if (type == MISSING)
    {
        missing.resize (value1);
        for (uint32_t& index : missing)
        {
            index = start.ReadNtohU32 ();
        }
    }
    return GetSerializedSize ();
}

void
FastpassHeader::Print (std::ostream& os) const
{
    os << "type=" << static_cast<uint32_t> (type) << " flow=" << flowId << " v0=" << value0
       << " v1=" << value1 << " slot=" << slot << " allocs=" << allocs.size ()
       << " missing=" << missing.size () << " areqs=" << areqs.size ();
}

} // namespace ns3
